package authcache

// MaxMisses is maxMisses, for the tests.
const MaxMisses = maxMisses

// Misses is how many unknown key hashes c keeps.
func Misses(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.misses)
}

// Len is the number of entries held, expired ones included.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

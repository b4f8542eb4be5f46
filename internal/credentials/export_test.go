package credentials

// SealedKeyID is the key id of a value in the current format; "" for a
// value of an earlier version or a malformed one.
func SealedKeyID(stored string) string {
	id, _, _ := parseSealed(stored)
	return id
}

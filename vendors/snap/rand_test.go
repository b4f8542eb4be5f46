package snap_test

import "crypto/rand"

// testRand is crypto/rand as an io.Reader value for rsa.GenerateKey.
type testRand struct{}

func (testRand) Read(p []byte) (int, error) { return rand.Read(p) }

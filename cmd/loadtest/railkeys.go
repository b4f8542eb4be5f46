package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// railKeyBits is the size of the RSA keys made for a SNAP rail: the
// least the service accepts (internal/config checkRSASize).
const railKeyBits = 2048

// railKeys are the PEM files of the two RSA key pairs a SNAP rail signs
// with, made for one run in a private directory (0700, files 0600) that
// remove deletes. The platform's pair signs the access token request
// (the service keeps the private half; the simulator verifies with the
// public half); the bank's pair signs the transfer notifications (the
// simulator keeps the private half; the service verifies with the public
// half). The zero value is a rail without keys.
type railKeys struct {
	dir string
	// platformKey and platformPublic are the platform's pair.
	platformKey, platformPublic string
	// bankKey and bankPublic are the simulated bank's pair.
	bankKey, bankPublic string
}

// newRailKeys makes both key pairs (2048-bit RSA, ~100 ms or more each:
// once per run, never per request) and writes them to a new private
// directory.
func newRailKeys() (railKeys, error) {
	dir, err := os.MkdirTemp("", "loadtest-rail-keys-*") // 0700
	if err != nil {
		return railKeys{}, fmt.Errorf("rail keys: %w", err)
	}
	k := railKeys{dir: dir}
	var errs []error
	k.platformKey, k.platformPublic, err = writeKeyPair(dir, "platform")
	errs = append(errs, err)
	k.bankKey, k.bankPublic, err = writeKeyPair(dir, "bank")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		k.remove()
		return railKeys{}, fmt.Errorf("rail keys: %w", err)
	}
	return k, nil
}

// writeKeyPair makes an RSA key and writes name.pem (PKCS #8) and
// name.pub.pem (PKIX) into dir, returning their paths.
func writeKeyPair(dir, name string) (private, public string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, railKeyBits)
	if err != nil {
		return "", "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	private, public = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub.pem")
	if err := writePEM(private, "PRIVATE KEY", der); err != nil {
		return "", "", err
	}
	return private, public, writePEM(public, "PUBLIC KEY", pub)
}

// writePEM creates path, readable by this user only, with one PEM block;
// it fails rather than write into a file that already exists.
func writePEM(path, kind string, der []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: kind, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// remove deletes the directory and the keys in it; safe on the zero
// value and more than once.
func (k *railKeys) remove() error {
	if k.dir == "" {
		return nil
	}
	err := os.RemoveAll(k.dir)
	if err == nil {
		k.dir = ""
	}
	return err
}

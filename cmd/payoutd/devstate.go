package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/payoutd/payoutd/admin"
)

// devStateFile is what dev mode keeps beside its database (mode 0600, as
// it holds the secrets key and the demo's credentials): with DEV_DATA_DIR,
// a restart reopens the same database under the same key as the same demo
// client; and `payoutd admin --dev` reads the running dev's connection
// settings from it.
const devStateFile = "dev.json"

// devState is the content of devStateFile.
type devState struct {
	SecretsKey    string `json:"secrets_key"`
	AdminUser     string `json:"admin_user"`
	AdminPassword string `json:"admin_password"`
	DatabaseURL   string `json:"database_url"`
	// RedisURL and APIURL are those of the dev running now (its embedded
	// Redis listens on a port of its own each run).
	RedisURL string `json:"redis_url"`
	APIURL   string `json:"api_url"`
	// Rails are the --vendors the data was made with; Demo its client.
	Rails []string       `json:"rails"`
	Demo  *devDemoRecord `json:"demo"`
}

// devDemoRecord is the demo client as provisioned: its credentials and its
// wallets' ids, in the order of the rails' wallets.
type devDemoRecord struct {
	Credentials admin.IssuedCredentials `json:"credentials"`
	WalletIDs   []string                `json:"wallet_ids"`
}

// loadDevState reads dir's state; (nil, nil) when there is none.
func loadDevState(dir string) (*devState, error) {
	raw, err := os.ReadFile(filepath.Join(dir, devStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s devState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, devStateFile), err)
	}
	return &s, nil
}

// save writes the state readable by this user only, replacing the file
// whole (a reader never sees half of it).
func (s *devState) save(dir string) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, devStateFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, devStateFile))
}

// secretsKey is the state's SECRETS_KEY as bytes.
func (s *devState) secretsKey() ([]byte, error) {
	key, err := hex.DecodeString(s.SecretsKey)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s: secrets_key is not 64 hex characters", devStateFile)
	}
	return key, nil
}

// railNames are the names of rails, as --vendors lists them.
func railNames(rails []devRail) []string {
	names := make([]string, len(rails))
	for i, r := range rails {
		names[i] = r.name
	}
	return names
}

// devPointerFile is where dev mode notes the data folder of the dev
// running now, for `payoutd admin --dev` run without PAYOUTD_DEV_DIR: in
// the user's cache folder ($XDG_CACHE_HOME, else ~/.cache), readable by the
// user only. "" when the environment names no home.
func devPointerFile(getenv func(string) string) string {
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".cache")
		}
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "payoutd", "dev-data-dir")
}

// notePointer records dataDir as the running dev's; without a home, or on
// a failure, `admin --dev` only loses its default (PAYOUTD_DEV_DIR works).
func notePointer(getenv func(string) string, dataDir string) error {
	path := devPointerFile(getenv)
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(dataDir+"\n"), 0o600)
}

// devAdminEnv is the environment `payoutd admin --dev` runs with: the
// running dev's database, Redis and secrets key, read from the data folder
// PAYOUTD_DEV_DIR names or, without it, the one the last dev started
// noted. Those four are dev's whatever the shell exports; the rest of the
// environment passes through.
func devAdminEnv(getenv func(string) string) (func(string) string, error) {
	dir := getenv("PAYOUTD_DEV_DIR")
	if dir == "" {
		path := devPointerFile(getenv)
		if path == "" {
			return nil, errors.New("--dev: no home folder to find the running dev from; set PAYOUTD_DEV_DIR to its data folder")
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, errors.New("--dev: no payoutd dev has started on this machine (start one, or set PAYOUTD_DEV_DIR to its data folder)")
		}
		dir = strings.TrimSpace(string(raw))
	}
	state, err := loadDevState(dir)
	if err != nil {
		return nil, fmt.Errorf("--dev: %w", err)
	}
	if state == nil {
		return nil, fmt.Errorf("--dev: %s has no %s: is it the data folder of a payoutd dev?", dir, devStateFile)
	}
	values := map[string]string{"DATABASE_URL": state.DatabaseURL, "REDIS_URL": state.RedisURL,
		"SECRETS_KEY": state.SecretsKey, "APP_ENV": "staging"}
	return func(k string) string {
		if v, ok := values[k]; ok {
			return v // dev's, whatever the shell exports for another deployment
		}
		return getenv(k)
	}, nil
}

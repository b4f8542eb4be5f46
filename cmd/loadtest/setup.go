package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// runSetup is what every run starts from: the secrets key, the database
// (recreated and migrated when self-contained) and the provisioned clients.
type runSetup struct {
	o             options
	env           models.Environment
	key           []byte
	sealer        *credentials.Sealer
	db            *gorm.DB
	fixture       *Fixture
	selfContained bool
}

func setUp(ctx context.Context, o options, info scenarioInfo, stderr io.Writer) (*runSetup, error) {
	env, _ := models.ParseEnvironment(o.env)
	key, err := secretsKey(o.secretsKey)
	if err != nil {
		return nil, err
	}
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		return nil, err
	}
	s := &runSetup{o: o, env: env, key: key, sealer: sealer, selfContained: o.target == ""}
	if s.selfContained {
		progress(stderr, "recreating database %s", redact(o.databaseURL))
		if err := recreateDatabase(ctx, o.databaseURL); err != nil {
			return nil, err
		}
	}
	if s.db, err = database.Open(o.databaseURL); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx, info, stderr); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *runSetup) prepare(ctx context.Context, info scenarioInfo, stderr io.Writer) error {
	if s.selfContained {
		if _, err := database.Migrate(ctx, s.db); err != nil {
			return err
		}
	} else if pending, err := database.PendingMigrations(ctx, s.db); err != nil {
		return fmt.Errorf("read migration state of -database-url: %w", err)
	} else if pending > 0 {
		return fmt.Errorf("-database-url is %d migration(s) behind: is it the database of -target?", pending)
	}
	if info.flushesRedis() && s.selfContained {
		progress(stderr, "flushing Redis database %s: no queue of an earlier run remains", redact(s.o.redisURL))
		if err := flushRedis(ctx, s.o.redisURL); err != nil {
			return err
		}
	}
	progress(stderr, "provisioning %d clients with a funded wallet each", s.o.clients)
	rail, _ := lookupRail(s.o.rail)
	deps := admin.Deps{DB: s.db, Sealer: s.sealer, Env: s.env, Vendors: provisionRegistry(rail)}
	var err error
	s.fixture, err = provision(ctx, deps, s.o.clients, rail.vendor)
	return err
}

func (s *runSetup) close() { closeDB(s.db) }

// serverConfig is the environment of the api and worker the tool starts.
func (s *runSetup) serverConfig(info scenarioInfo) serverConfig {
	return serverConfig{databaseURL: s.o.databaseURL, redisURL: s.o.redisURL, env: s.env, secretsKey: s.key,
		extraEnv: serverEnv(s.o, info)}
}

// serverEnv is what the tool adds to a started server's environment: for
// creates, no wait for the worker and a sandbox vendor that pays at once;
// then -server-env, which may override them.
func serverEnv(o options, info scenarioInfo) []string {
	var env []string
	if info.creates {
		env = append(env, "DISBURSEMENT_SUBMIT_WAIT=0s", "SANDBOX_COMPLETE_AFTER="+o.sandboxCompleteAfter.String())
	}
	return append(env, o.serverEnv...)
}

// secretsKey decodes the -secrets-key flag or, when it is empty, makes a
// random key (the tool then starts the server with it).
func secretsKey(flagValue string) ([]byte, error) {
	if flagValue != "" {
		key, err := credentials.ParseSecretsKey(flagValue)
		if err != nil {
			return nil, fmt.Errorf("-secrets-key: %w", err)
		}
		return key, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return key, nil
}

// Fixture is what provisioning made: the merchant clients with their
// clear-text credentials, each with one funded wallet.
type Fixture struct {
	Clients []LoadClient
	// Admin provisions more, with the same database, sealer and environment.
	Admin admin.Deps
}

// LoadClient is one provisioned merchant client.
type LoadClient struct {
	ClientID      string
	APIKey        string
	SigningSecret string
	WalletID      string
}

// signedTarget is one client's request body, serialised once, with the
// credentials that send it: every request to it sends (and, signed,
// signs) these exact bytes. A create's target is a wallet, a payment's a
// client.
type signedTarget struct {
	body   []byte
	apiKey string
	secret string
}

// openingBalance funds every load-test wallet (IDR).
const openingBalance = "1000000000"

// provision creates n merchant clients, each with one funded wallet on
// vendor.
func provision(ctx context.Context, d admin.Deps, n int, vendor string) (*Fixture, error) {
	f := &Fixture{Clients: make([]LoadClient, 0, n), Admin: d}
	for i := range n {
		creds, err := admin.CreateClient(ctx, d, admin.ClientOptions{Name: fmt.Sprintf("Load test merchant %d", i+1)})
		if err != nil {
			return nil, fmt.Errorf("create client: %w", err)
		}
		if creds.SigningSecret == nil {
			return nil, errors.New("create client: no signing secret issued")
		}
		clientID, err := uuid.Parse(creds.ClientID)
		if err != nil {
			return nil, err
		}
		w, err := admin.CreateWallet(ctx, d, admin.WalletOptions{ClientID: clientID, Name: "Load test wallet", Vendor: vendor})
		if err != nil {
			return nil, fmt.Errorf("create wallet: %w", err)
		}
		walletID, err := uuid.Parse(w.WalletID)
		if err != nil {
			return nil, err
		}
		if _, err := admin.AdjustWallet(ctx, d, walletID, openingBalance, "load test opening balance"); err != nil {
			return nil, fmt.Errorf("fund wallet: %w", err)
		}
		f.Clients = append(f.Clients, LoadClient{
			ClientID: creds.ClientID, APIKey: creds.APIKey, SigningSecret: *creds.SigningSecret, WalletID: w.WalletID,
		})
	}
	return f, nil
}

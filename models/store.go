package models

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Store reads and writes clients, credentials and wallets. Public methods
// own their transaction; the ledger package moves money.
type Store struct {
	DB *gorm.DB
}

// NewStore wraps a gorm handle.
func NewStore(db *gorm.DB) *Store { return &Store{DB: db} }

// NewID returns a new random (v4) UUID for any row.
func NewID() uuid.UUID { return uuid.New() }

// Now is the service's clock for stored timestamps: UTC, microsecond
// precision (what PostgreSQL keeps), so a value reads back as written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// CreateClient stores a client with its first credential.
func (s *Store) CreateClient(ctx context.Context, c *Client, cred *Credential) error {
	return s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(c).Error; err != nil {
			return err
		}
		cred.ClientID = c.ID
		return tx.Create(cred).Error
	})
}

// FindClient returns the client with id, or ErrClientNotFound.
func (s *Store) FindClient(ctx context.Context, id uuid.UUID) (*Client, error) {
	var c Client
	err := s.DB.WithContext(ctx).Where("id = ?", id).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrClientNotFound
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SaveClient writes every field of an existing client.
func (s *Store) SaveClient(ctx context.Context, c *Client) error {
	c.UpdatedAt = Now()
	res := s.DB.WithContext(ctx).Model(&Client{}).Where("id = ?", c.ID).Select("*").Omit("created_at").Updates(c)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrClientNotFound
	}
	return nil
}

// RotateCredential revokes the client's active credential and stores cred
// in the same transaction, so exactly one credential is active afterwards.
func (s *Store) RotateCredential(ctx context.Context, clientID uuid.UUID, cred *Credential) error {
	return s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var c Client
		if err := tx.Where("id = ?", clientID).Take(&c).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrClientNotFound
			}
			return err
		}
		if err := tx.Model(&Credential{}).
			Where("client_id = ? AND revoked_at IS NULL", clientID).
			Update("revoked_at", Now()).Error; err != nil {
			return err
		}
		cred.ClientID = clientID
		return tx.Create(cred).Error
	})
}

// Principal is what authentication learns from an API key: the client and
// its active credential.
type Principal struct {
	Client     Client
	Credential Credential
}

// FindPrincipalByKeyHash returns the client whose active credential has
// this API key hash, or ErrInvalidAPIKey. A revoked key is not found. It is
// on the path of every request, hence one query for both rows.
func (s *Store) FindPrincipalByKeyHash(ctx context.Context, keyHash string) (*Principal, error) {
	var row principalRow
	err := s.DB.WithContext(ctx).Raw(`SELECT
	        cr.id AS cred_id, cr.api_key_hash, cr.api_key_prefix, cr.signing_secret_enc, cr.callback_secret_enc,
	        cr.created_at AS cred_created_at,
	        c.id, c.name, c.kind, c.environment, c.allowed_ips, c.payout_webhook_url, c.payment_webhook_url,
	        c.withdrawals, c.payment_fee_bps, c.bifast_fee, c.rtol_fee, c.bifast_min_net, c.rtol_min_net,
	        c.review_threshold, c.write_rate_limit, c.read_rate_limit, c.require_signature_v2, c.created_at, c.updated_at
	    FROM credentials cr JOIN clients c ON c.id = cr.client_id
	    WHERE cr.api_key_hash = ? AND cr.revoked_at IS NULL`, keyHash).Scan(&row).Error
	if err != nil {
		return nil, err
	}
	if row.CredID == uuid.Nil {
		return nil, ErrInvalidAPIKey
	}
	return &Principal{
		Client: row.Client,
		Credential: Credential{
			ID: row.CredID, ClientID: row.Client.ID, APIKeyHash: row.APIKeyHash, APIKeyPrefix: row.APIKeyPrefix,
			SigningSecretEnc: row.SigningSecretEnc, CallbackSecretEnc: row.CallbackSecretEnc, CreatedAt: row.CredCreatedAt,
		},
	}, nil
}

// principalRow is one row of the credential-and-client join.
type principalRow struct {
	CredID            uuid.UUID
	APIKeyHash        string
	APIKeyPrefix      string
	SigningSecretEnc  *string
	CallbackSecretEnc string
	CredCreatedAt     time.Time
	Client            `gorm:"embedded"`
}

// CreateWallet stores a wallet. The client's first wallet becomes its
// default; a wallet created with IsDefault set takes the default over.
//
// Creates for one client are serialised on the client's row (SELECT … FOR
// UPDATE on PostgreSQL; SQLite has a single writer already): otherwise two
// concurrent first creates both count no wallet, both claim the default,
// and one dies on the wallets_one_default index.
func (s *Store) CreateWallet(ctx context.Context, w *Wallet) error {
	return s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var c Client
		q := tx.Select("id")
		if tx.Dialector.Name() == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Where("id = ?", w.ClientID).Take(&c).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrClientNotFound
			}
			return err
		}
		var existing int64
		if err := tx.Model(&Wallet{}).Where("client_id = ?", w.ClientID).Count(&existing).Error; err != nil {
			return err
		}
		if existing == 0 {
			w.IsDefault = true
		}
		if w.IsDefault && existing > 0 {
			if err := tx.Model(&Wallet{}).Where("client_id = ? AND is_default", w.ClientID).
				Updates(map[string]any{"is_default": false, "updated_at": Now()}).Error; err != nil {
				return err
			}
		}
		return tx.Create(w).Error
	})
}

// FindWallet returns the client's wallet with id, or ErrWalletNotFound.
func (s *Store) FindWallet(ctx context.Context, id uuid.UUID) (*Wallet, error) {
	var w Wallet
	err := s.DB.WithContext(ctx).Where("id = ?", id).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrWalletNotFound
	}
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// FindClientWallet returns the wallet only when it belongs to clientID and
// is fully provisioned; anything else is ErrWalletNotFound, so a caller
// cannot tell another client's wallet from one that does not exist.
//
// It is on the path of every wallet read, so the row is scanned by hand:
// gorm's reflection cost as much as the query itself.
func (s *Store) FindClientWallet(ctx context.Context, clientID, walletID uuid.UUID) (*Wallet, error) {
	var w Wallet
	err := s.DB.WithContext(ctx).Raw(`SELECT id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at
	    FROM wallets WHERE id = ? AND client_id = ? AND state = ?`, walletID, clientID, WalletActive).Row().
		Scan(&w.ID, &w.ClientID, &w.Name, &w.Vendor, &w.State, &w.IsDefault, &w.Balance, &w.Locked, &w.CreatedAt, &w.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrWalletNotFound
	}
	if err != nil {
		return nil, TranslateDBError(s.DB, err)
	}
	return &w, nil
}

// FindWallets returns the wallets with the ids, in no particular order,
// whatever their state and owner: the caller checks those (the API's
// batched wallet reads, api/walletreads.go). One query for many ids costs
// PostgreSQL and the API about what one id does.
//
// On PostgreSQL the ids go as one uuid[] (the driver's FindWallets).
func (s *Store) FindWallets(ctx context.Context, ids []uuid.UUID) ([]Wallet, error) {
	return DriverOf(s.DB).FindWallets(ctx, s.DB, ids)
}

// ListClientWallets returns the client's provisioned wallets, oldest first.
func (s *Store) ListClientWallets(ctx context.Context, clientID uuid.UUID) ([]Wallet, error) {
	wallets := []Wallet{}
	err := s.DB.WithContext(ctx).
		Where("client_id = ? AND state = ?", clientID, WalletActive).
		Order("created_at, id").Find(&wallets).Error
	return wallets, err
}

// ActivateWallet marks a provisioning wallet as fully provisioned.
func (s *Store) ActivateWallet(ctx context.Context, id uuid.UUID) (*Wallet, error) {
	res := s.DB.WithContext(ctx).Model(&Wallet{}).Where("id = ?", id).
		Updates(map[string]any{"state": WalletActive, "updated_at": Now()})
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, ErrWalletNotFound
	}
	return s.FindWallet(ctx, id)
}

// TranslateDBError passes err, met by a statement whose error gorm does
// not see (a Row's Scan: the query's error surfaces only there), through
// the dialect's translator as gorm does its own statements' errors: a
// unique violation becomes gorm.ErrDuplicatedKey, and on PostgreSQL a
// connection that broke under the statement is marked as the database's,
// so that the API answers it 503 and not 500.
func TranslateDBError(db *gorm.DB, err error) error {
	if t, ok := db.Dialector.(gorm.ErrorTranslator); ok && err != nil {
		return t.Translate(err)
	}
	return err
}

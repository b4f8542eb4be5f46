package database_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// The refusals of both databases are told apart from the service's own
// errors, whatever wraps them: callers answer them in words and log them.
func TestClassifyConstraintViolations(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	now := models.Now()
	client := models.Client{ID: uuid.New(), Name: "Toko", Kind: models.KindMerchant, Environment: models.Staging,
		Withdrawals: models.WithdrawalsActive, CreatedAt: now, UpdatedAt: now}
	if err := db.WithContext(ctx).Create(&client).Error; err != nil {
		t.Fatal(err)
	}
	dup := db.WithContext(ctx).Create(&client).Error
	check := db.WithContext(ctx).Exec(`UPDATE clients SET payment_fee_bps = -1 WHERE id = ?`, client.ID).Error
	fk := db.WithContext(ctx).Create(&models.Wallet{ID: uuid.New(), ClientID: uuid.New(), Name: "W", Vendor: "simbank",
		State: models.WalletActive, CreatedAt: now, UpdatedAt: now}).Error
	syntax := db.WithContext(ctx).Exec(`SELEC 1`).Error
	for _, tc := range []struct {
		name string
		err  error
		want database.Failure
	}{
		{"unique", dup, database.Conflict},
		{"unique, wrapped", fmt.Errorf("%w: %w", models.ErrConflict, dup), database.Conflict},
		{"check", check, database.OutOfRange},
		{"foreign key", fk, database.MissingReference},
		{"syntax", syntax, database.OtherFailure},
		{"a domain error", models.ErrClientNotFound, database.NotADatabaseError},
		{"a command's error", errors.New("--name is required"), database.NotADatabaseError},
		{"nil", nil, database.NotADatabaseError},
	} {
		if got := database.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

package database

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// recording is an inner logger that remembers what reached it.
type recording struct {
	logger.Interface
	traced int
}

func (r *recording) Trace(context.Context, time.Time, func() (string, int64), error) { r.traced++ }

func TestQuietLoggerPassesOnlySlowAndUnexpected(t *testing.T) {
	rendered := 0
	fc := func() (string, int64) { rendered++; return "SELECT 1", 1 }
	tests := []struct {
		name  string
		begin time.Time
		err   error
		want  bool
	}{
		{"fast and fine", time.Now(), nil, false},
		{"not found", time.Now(), gorm.ErrRecordNotFound, false},
		{"duplicate key, translated", time.Now(), gorm.ErrDuplicatedKey, false},
		{"duplicate key, raw", time.Now(), &pgconn.PgError{Code: "23505"}, false},
		{"slow", time.Now().Add(-time.Second), nil, true},
		{"a real error", time.Now(), errors.New("connection reset"), true},
		{"a deadlock", time.Now(), &pgconn.PgError{Code: "40P01"}, true},
	}
	for _, tt := range tests {
		inner := &recording{}
		newLogger(inner).Trace(context.Background(), tt.begin, fc, tt.err)
		if got := inner.traced == 1; got != tt.want {
			t.Errorf("%s: logged = %v, want %v", tt.name, got, tt.want)
		}
	}
	if rendered != 0 {
		t.Errorf("the wrapper itself rendered %d statements", rendered)
	}
}

// A statement that is logged (here: one that fails) is logged without its
// values: they may be API key hashes, account numbers or secrets. Raw's
// Scan goes through gorm's trace recorder, not the logger's filter, so it
// is checked on its own.
func TestLoggedStatementsCarryNoValues(t *testing.T) {
	var out bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&out, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	db, err := Open("sqlite://" + filepath.Join(t.TempDir(), "log.db"))
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]func(sql string, value string) error{
		"Exec": func(sql, value string) error { return db.Exec(sql, value).Error },
		"Raw and Scan": func(sql, value string) error {
			var rows []struct{ AccountNo string }
			return db.Raw(sql, value).Scan(&rows).Error
		},
		"Raw with a named value and Scan": func(sql, value string) error {
			var rows []struct{ AccountNo string }
			return db.Raw(strings.Replace(sql, "?", "@account", 1), map[string]any{"account": value}).Scan(&rows).Error
		},
		// The hot statements that bypass gorm's callbacks.
		"QueryDirect": func(sql, value string) error {
			rows, err := QueryDirect(context.Background(), db, sql, value)
			if err == nil {
				rows.Close()
			}
			return err
		},
	}
	for name, statement := range run {
		out.Reset()
		if err := statement("SELECT * FROM no_such_table WHERE account_no = ?", "9876543210-secret"); err == nil {
			t.Fatalf("%s: the statement should fail", name)
		}
		logged := out.String()
		if !strings.Contains(logged, "no_such_table") {
			t.Fatalf("%s: the failed statement was not logged: %s", name, logged)
		}
		if strings.Contains(logged, "9876543210-secret") {
			t.Errorf("%s: a value reached the log: %s", name, logged)
		}
	}
}

package models_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database/pgdriver"
	"github.com/payoutd/payoutd/internal/database/sqlitedriver"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// notADriver is a gorm plugin under the driver's name that is not one.
type notADriver struct{}

func (notADriver) Name() string              { return models.DriverName }
func (notADriver) Initialize(*gorm.DB) error { return nil }

// A handle without the driver is a programming error that DriverOf names
// (how to open a handle that has one), and LookupDriver returns as an
// error; a handle opened by internal/database has its dialect's.
func TestDriverLookup(t *testing.T) {
	t.Parallel()
	withPlugins := func(plugins map[string]gorm.Plugin) *gorm.DB {
		return &gorm.DB{Config: &gorm.Config{Plugins: plugins}}
	}
	for _, c := range []struct {
		name string
		db   *gorm.DB
		want models.Driver // nil: the lookup fails
		err  string        // in the error and the panic
	}{
		{"nil handle", nil, nil, "internal/database.Open"},
		{"no config", &gorm.DB{}, nil, "internal/database.Open"},
		{"no plugin", withPlugins(map[string]gorm.Plugin{}), nil, "no payoutd:driver plugin installed: open it with internal/database.Open"},
		{"another plugin under the name", withPlugins(map[string]gorm.Plugin{models.DriverName: notADriver{}}), nil, "not a models.Driver"},
		{"PostgreSQL", withPlugins(map[string]gorm.Plugin{models.DriverName: pgdriver.New()}), pgdriver.New(), ""},
		{"SQLite", withPlugins(map[string]gorm.Plugin{models.DriverName: sqlitedriver.New()}), sqlitedriver.New(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := models.LookupDriver(c.db)
			if c.want != nil {
				if err != nil || got != c.want {
					t.Fatalf("LookupDriver = %T, %v; want %T", got, err, c.want)
				}
				if d := models.DriverOf(c.db); d != c.want {
					t.Fatalf("DriverOf = %T, want %T", d, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("LookupDriver error %v, want one saying %q", err, c.err)
			}
			defer func() {
				r := recover()
				perr, ok := r.(error)
				if !ok || perr.Error() != err.Error() {
					t.Fatalf("DriverOf panicked with %v, want %v", r, err)
				}
			}()
			models.DriverOf(c.db)
			t.Fatal("DriverOf did not panic")
		})
	}
}

// Every handle the tests open (as internal/database.Open does for the
// service) carries its dialect's driver, and so do its sessions and
// transactions.
func TestOpenInstallsTheDriver(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	want := models.Driver(sqlitedriver.New())
	if db.Dialector.Name() == "postgres" {
		want = pgdriver.New()
	}
	if got := models.DriverOf(db); got != want {
		t.Fatalf("DriverOf(db) = %T, want %T", got, want)
	}
	err := db.Session(&gorm.Session{}).Transaction(func(tx *gorm.DB) error {
		if got := models.DriverOf(tx); got != want {
			t.Fatalf("DriverOf(tx) = %T, want %T", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

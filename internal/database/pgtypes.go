package database

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerTypes teaches each new PostgreSQL connection the service's own
// Go types. pgx encodes a uuid.UUID through its driver.Valuer otherwise: a
// string it then parses back, allocating an error on the way, which cost
// about a tenth of the API's CPU on a disbursement create.
func registerTypes(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUID}, m.TryWrapEncodePlanFuncs...)
	// The money statements bind wallet ids as [][16]byte (pgdriver's
	// uuidArray). pgx learns a parameter's type from the server, except in
	// the query modes that prepare nothing (exec, simple_protocol: behind
	// PgBouncer's transaction pooling), where it goes by the Go type.
	m.RegisterDefaultPgType([][16]byte(nil), "_uuid")
	return nil
}

// tryWrapUUID hands pgx a uuid.UUID as the 16 bytes it is, which pgx's
// uuid codec encodes directly.
func tryWrapUUID(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, [16]byte(u), true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode([16]byte(value.(uuid.UUID)), buf)
}

-- Schema parity (issue 12). TestSchemaParity compares this schema with
-- SQLite's; the one drift it found was on SQLite's side (primary keys that
-- accepted NULL), fixed in sqlite/00009_schema_parity.sql. PostgreSQL's
-- schema is already what that migration brings SQLite to: this version is
-- empty, so that both dialects keep the same versions.

-- +goose Up

-- +goose Down

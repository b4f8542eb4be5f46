// Package models is the domain of the payout service: clients and their
// credentials, wallets, money, the domain errors every layer shares, the
// gorm-backed store that reads and writes them, and the Driver the domain
// runs what differs between PostgreSQL and SQLite through (DriverOf).
//
// It knows nothing of HTTP or queues. Request and response shapes live in
// package api, task payloads in package tasks.
//
// Money is an Amount: an exact signed integer count of ten-thousandths of a
// rupiah (scale 4), parsed with shopspring/decimal at the edge and stored as
// BIGINT so that PostgreSQL and SQLite do the same exact arithmetic.
package models

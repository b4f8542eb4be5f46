// Package api is the HTTP interface of the service: a gin engine with the
// routes of openapi.yaml, one authentication middleware, the
// signature diagnostic endpoint, and the operator endpoints (health,
// readiness, the asynq dashboard).
//
// Handlers validate input, call the store or the ledger, and shape the
// answer. Errors become statuses only in errors.go.
package api

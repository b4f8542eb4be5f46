// Package admin is the operator's command line, `payoutd admin ...`, with
// a JSON contract (docs/design.md, Admin CLI contract): each command prints
// one JSON object on stdout; an error prints {"error": "..."} on stderr and
// exits non-zero (2 for a usage error, 3 when reconcile finds a problem).
//
// The provisioning functions (CreateClient, CreateWallet, ...) are also
// used by `payoutd dev` to make its demo client.
package admin

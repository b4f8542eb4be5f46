// Package admin is the operator's command line, `payoutd admin ...`, with
// the JSON contract of DESIGN.md: each command prints one JSON object on
// stdout; an error prints {"error": "..."} on stderr and exits non-zero.
//
// The provisioning functions (CreateClient, CreateWallet, ...) are also
// used by `payoutd dev` to make its demo client.
package admin

// Package model holds the checked model of the submit protocol: a Promela
// model (submit.pml) of how payouts and dispatch claim, submit, ask about,
// move and return a disbursement, and the test that runs Spin on it: every
// property holds on the model, and each guard of the protocol, removed on
// its own, breaks the property it is there for. It is documentation that
// a machine checks; docs/model.md explains it. No Go code uses it.
package model

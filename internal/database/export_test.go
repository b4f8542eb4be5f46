package database

// NewProvider is the migrations' goose provider, for tests that migrate
// down and up again.
var NewProvider = newProvider

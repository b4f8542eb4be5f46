package api

import (
	"context"

	"github.com/google/uuid"
)

// ForgetClient drops what this instance cached of a client that changed;
// tests wire it where running instances hear of the change through Redis.
func (s *Server) ForgetClient(_ context.Context, clientID uuid.UUID) { s.principals.Forget(clientID) }

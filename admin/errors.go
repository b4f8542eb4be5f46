package admin

import (
	"io"
	"log/slog"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/logging"
)

// Operator messages for failures of the database itself. A command's answer
// never carries the driver's text (SQL, constraint names, SQLSTATE): it says
// what happened in words, and the full error follows on stderr as a log line.
const (
	msgConflict         = "the change conflicts with an existing record (perhaps made by a command running at the same time); nothing was saved, retry or see the log line below"
	msgMissingReference = "the change refers to a record that does not exist (any more); nothing was saved, see the log line below"
	msgOutOfRange       = "the database refused a value outside its allowed range; nothing was saved, see the log line below"
	msgUnavailable      = "the database cannot be reached; check DATABASE_URL and that the database is up (log line below)"
	msgDatabaseFailure  = "the database refused the command; see the log line below"
)

// operatorMessage is the text an operator sees for err: the error's own
// text for the commands' errors, a sentence for a database failure (then
// inDatabase is true, and the caller logs err in full after the answer).
func operatorMessage(err error) (msg string, inDatabase bool) {
	switch database.Classify(err) {
	case database.NotADatabaseError:
		return err.Error(), false
	case database.Conflict:
		return msgConflict, true
	case database.MissingReference:
		return msgMissingReference, true
	case database.OutOfRange:
		return msgOutOfRange, true
	case database.Unavailable:
		return msgUnavailable, true
	}
	return msgDatabaseFailure, true
}

// logDatabaseFailure writes the full error of a failed command as one JSON
// log line on stderr, after the {"error"} line scripts read.
func logDatabaseFailure(stderr io.Writer, command string, err error) {
	logging.New(stderr, slog.LevelError).Error("admin command failed in the database",
		slog.String("command", command), slog.Any("error", err))
}

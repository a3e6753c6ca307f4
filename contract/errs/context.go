package errs

import "context"

var (
	errContextCanceled  = context.Canceled
	errDeadlineExceeded = context.DeadlineExceeded
)

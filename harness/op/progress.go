package op

import "context"

// ProgressFunc receives progress of a long operation (job_status with
// wait_s, durable checks). Surfaces turn it into MCP progress notifications.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns a context whose long operations report to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Report reports to the context's ProgressFunc, if any.
func Report(ctx context.Context, progress, total float64, message string) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && f != nil {
		f(progress, total, message)
	}
}

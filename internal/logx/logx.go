// Package logx builds harnessd's zap loggers and routes protoactor's slog
// and Badger's logger into them.
package logx

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// New returns a logger writing to w (stderr when nil) at level ("debug",
// "info", "warn", "error") in format "json" or "console".
func New(level, format string, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "ts"
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json", "":
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q: want json or console", format)
	}
	if w == nil {
		w = os.Stderr
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.AddCaller()), nil
}

// ActorSystemOption routes protoactor's slog output into lg, raised to Warn:
// protoactor logs every dead letter and system start at Info.
func ActorSystemOption(lg *zap.Logger) actor.ConfigOption {
	return actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zapslog.NewHandler(lg.WithOptions(zap.IncreaseLevel(zap.WarnLevel)).Core(), zapslog.WithName("protoactor")))
	})
}

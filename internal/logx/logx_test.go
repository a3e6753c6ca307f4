package logx_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/harnessd/harnessd/internal/logx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsBadLevelAndFormat(t *testing.T) {
	tests := []struct {
		name          string
		level, format string
		want          []string // substrings of the error
	}{
		{"bad level", "loud", "json", []string{`"loud"`, "debug", "info", "warn", "error"}},
		{"bad format", "info", "xml", []string{`"xml"`, "json", "console"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lg, err := logx.New(tt.level, tt.format, &bytes.Buffer{})
			if err == nil {
				t.Fatalf("New(%q, %q) = %v, nil; want an error", tt.level, tt.format, lg)
			}
			if lg != nil {
				t.Errorf("New returned a logger with the error")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

func TestNewFormats(t *testing.T) {
	for _, format := range []string{"json", ""} {
		t.Run("json/"+format, func(t *testing.T) {
			var buf bytes.Buffer
			lg, err := logx.New("info", format, &buf)
			if err != nil {
				t.Fatal(err)
			}
			lg.Info("hello", zap.String("k", "v"))
			var line map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
				t.Fatalf("output %q is not one JSON object: %v", buf.String(), err)
			}
			for k, want := range map[string]any{"level": "info", "msg": "hello", "k": "v"} {
				if line[k] != want {
					t.Errorf("%s = %v, want %v (line %s)", k, line[k], want, buf.String())
				}
			}
			for _, k := range []string{"ts", "caller"} {
				if _, ok := line[k]; !ok {
					t.Errorf("no %q key in %s", k, buf.String())
				}
			}
		})
	}
	t.Run("console", func(t *testing.T) {
		var buf bytes.Buffer
		lg, err := logx.New("info", "console", &buf)
		if err != nil {
			t.Fatal(err)
		}
		lg.Info("hello", zap.String("k", "v"))
		out := buf.String()
		if json.Valid(bytes.TrimSpace(buf.Bytes())) {
			t.Errorf("console output is JSON: %q", out)
		}
		for _, s := range []string{"\tINFO\t", "hello", `{"k": "v"}`} {
			if !strings.Contains(out, s) {
				t.Errorf("console output %q lacks %q", out, s)
			}
		}
	})
}

func TestNewLevelFiltering(t *testing.T) {
	tests := []struct {
		level string
		want  []string // messages that get through, of debug, info, warn, error
	}{
		{"debug", []string{"d", "i", "w", "e"}},
		{"info", []string{"i", "w", "e"}},
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var buf bytes.Buffer
			lg, err := logx.New(tt.level, "json", &buf)
			if err != nil {
				t.Fatal(err)
			}
			lg.Debug("d")
			lg.Info("i")
			lg.Warn("w")
			lg.Error("e")
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if l == "" {
					continue
				}
				var e struct{ Msg string }
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				got = append(got, e.Msg)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("at %s logged %v, want %v", tt.level, got, tt.want)
			}
		})
	}
}

func TestActorSystemOptionRaisesToWarn(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	sys := actor.NewActorSystemWithConfig(actor.Configure(logx.ActorSystemOption(zap.New(core))))
	t.Cleanup(sys.Shutdown)

	// The system logs "actor system started" at Info while it is built.
	if n := logs.FilterMessage("actor system started").Len(); n != 0 {
		t.Errorf("protoactor's Info start line got through %d times", n)
	}
	sys.Logger().Debug("a debug line")
	sys.Logger().Info("an info line")
	sys.Logger().Warn("a warn line", "k", "v")
	sys.Logger().Error("an error line")

	if n := logs.FilterLevelExact(zapcore.InfoLevel).Len() + logs.FilterLevelExact(zapcore.DebugLevel).Len(); n != 0 {
		t.Errorf("%d Debug/Info lines got through: %v", n, logs.All())
	}
	warn := logs.FilterMessage("a warn line").All()
	if len(warn) != 1 {
		t.Fatalf("warn lines = %d, want 1 (all: %v)", len(warn), logs.All())
	}
	// Not checked: LoggerName. ActorSystemOption names the logger
	// "protoactor" but passes only its Core to zapslog, which drops the name.
	if warn[0].Level != zapcore.WarnLevel {
		t.Errorf("warn entry level = %s, want warn", warn[0].Level)
	}
	if got := warn[0].ContextMap()["k"]; got != "v" {
		t.Errorf("warn attribute k = %v, want v", got)
	}
	if logs.FilterMessage("an error line").Len() != 1 {
		t.Errorf("error line missing: %v", logs.All())
	}
}

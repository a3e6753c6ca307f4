package proc

import (
	"bytes"
	"strings"
)

// RunIDEnv is the environment variable that carries a run's marker. Every
// process started by Start, and every descendant that keeps its environment,
// has RunIDEnv=<32 hex digits>; the sweep finds escaped descendants by it.
const RunIDEnv = "HARNESSD_RUN_ID"

// secretWords are the upper-case name fragments IsSecretName looks for.
var secretWords = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY",
	"PRIVATE_KEY", "CREDENTIAL", "ACCESS_KEY", "SESSION_KEY",
}

// IsSecretName is ScrubEnv's built-in check: it reports whether an environment
// variable name contains, case-insensitively, one of TOKEN, SECRET, PASSWORD,
// PASSWD, API_KEY, APIKEY, PRIVATE_KEY, CREDENTIAL, ACCESS_KEY or SESSION_KEY.
func IsSecretName(name string) bool {
	var stack [128]byte
	upper := stack[:0]
	if len(name) > len(stack) {
		upper = make([]byte, 0, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = append(upper, c)
	}
	for _, w := range secretWordBytes {
		if bytes.Contains(upper, w) {
			return true
		}
	}
	return false
}

var secretWordBytes = func() [][]byte {
	b := make([][]byte, len(secretWords))
	for i, w := range secretWords {
		b[i] = []byte(w)
	}
	return b
}()

// ScrubEnv returns a copy of env ("NAME=value" entries) without the variables
// whose name isSecret reports as secret; a nil isSecret means IsSecretName.
// Entries without '=' are dropped too, since no child can use them. env is not
// modified. The result is never nil, so it can be used as an exec environment
// without meaning "inherit everything".
func ScrubEnv(env []string, isSecret func(name string) bool) []string {
	if isSecret == nil {
		isSecret = IsSecretName
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || isSecret(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// envValue returns the value of the last entry for name in env, as the exec
// environment deduplication keeps the last one.
func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// childEnv returns env without any RunIDEnv entry, plus RunIDEnv=runID.
func childEnv(env []string, runID string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, RunIDEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, RunIDEnv+"="+runID)
}

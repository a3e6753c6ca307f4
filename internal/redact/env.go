package redact

import "strings"

// secretEnvNames are secret environment variables whose names the patterns
// of IsSecretEnvName do not cover.
var secretEnvNames = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN",
	"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "NPM_TOKEN", "TOKEN", "API_KEY", "APIKEY",
	"PASSWORD", "PGPASSWORD", "MYSQL_PWD", "SECRET", "CREDENTIALS",
}

// IsSecretEnvName reports whether an environment variable with this name
// holds a secret and must be scrubbed from a child process's environment:
// *_TOKEN, *SECRET*, *PASSWORD*, *PASSWD*, *_API_KEY, *_APIKEY,
// *PRIVATE_KEY*, *CREDENTIALS*, *_ACCESS_KEY, *_AUTH, *_PASS, *_PAT, and
// well-known names such as GITHUB_TOKEN or ANTHROPIC_API_KEY. Names are
// compared without regard to case.
//
// Variables such as DATABASE_URL may hold credentials ("user:pass@host") but
// are not secret by name; redact their values instead. PATH, HOME, PWD,
// GOPATH, GOFLAGS, LANG, SSH_AUTH_SOCK, GIT_ASKPASS and the like are not
// secret.
func IsSecretEnvName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	n := strings.ToUpper(name)
	for _, s := range secretEnvNames {
		if n == s {
			return true
		}
	}
	for _, sub := range []string{"SECRET", "PASSWORD", "PASSWD", "PRIVATE_KEY", "PRIVATEKEY", "CREDENTIALS"} {
		if strings.Contains(n, sub) {
			return true
		}
	}
	for _, suf := range []string{"_TOKEN", "_API_KEY", "_APIKEY", "_ACCESS_KEY", "_AUTH", "_PASS", "_PAT", "_PWD"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

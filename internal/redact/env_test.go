package redact

import "testing"

func TestIsSecretEnvName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_SESSION_TOKEN", true},
		{"GITHUB_TOKEN", true},
		{"GH_TOKEN", true},
		{"NPM_TOKEN", true},
		{"MY_SERVICE_TOKEN", true},
		{"CLIENT_SECRET", true},
		{"SECRET_KEY_BASE", true},
		{"JWT_SECRET", true},
		{"DB_PASSWORD", true},
		{"PGPASSWORD", true},
		{"PASSWORD_FILE_CONTENTS", true},
		{"MYSQL_PWD", true},
		{"REDIS_PASS", true},
		{"STRIPE_API_KEY", true},
		{"SENDGRID_APIKEY", true},
		{"ANTHROPIC_API_KEY", true},
		{"OPENAI_API_KEY", true},
		{"SSH_PRIVATE_KEY", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"MINIO_ACCESS_KEY", true},
		{"NPM_CONFIG__AUTH", true},
		{"AZURE_DEVOPS_PAT", true},
		{"github_token", true},
		{"PATH", false},
		{"HOME", false},
		{"PWD", false},
		{"OLDPWD", false},
		{"GOPATH", false},
		{"GOFLAGS", false},
		{"GOPROXY", false},
		{"LANG", false},
		{"LC_ALL", false},
		{"TERM", false},
		{"USER", false},
		{"SHELL", false},
		{"SSH_AUTH_SOCK", false},
		{"GIT_ASKPASS", false},
		{"SSH_ASKPASS", false},
		{"TOKENIZERS_PARALLELISM", false},
		{"DATABASE_URL", false},
		{"AWS_REGION", false},
		{"AWS_ACCESS_KEY_ID", false},
		{"KEYCHAIN_PATH", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsSecretEnvName(tt.name); got != tt.want {
				t.Errorf("IsSecretEnvName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

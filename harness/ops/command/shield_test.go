package command

import (
	"slices"
	"testing"
)

func TestShieldArgv(t *testing.T) {
	pats := []string{".env*", ".ssh/**", ".aws/credentials", "/top.key"}
	tests := []struct {
		name string
		argv []string
		want []string
	}{
		{"cat untouched", []string{"cat", "a"}, []string{"cat", "a"}},
		{"git status untouched", []string{"git", "status"}, []string{"git", "status"}},
		{"git log -p", []string{"git", "log", "-p"}, []string{"git", "log", "-p", "--", ":(top)",
			":(exclude,glob,icase)**/.env*", ":(exclude,glob,icase)**/.ssh/**", ":(exclude,glob,icase)**/.aws/credentials", ":(exclude,glob,icase)top.key"}},
		{"git diff with paths", []string{"git", "diff", "HEAD", "--", "src"}, []string{"git", "diff", "HEAD", "--", "src",
			":(exclude,glob,icase)**/.env*", ":(exclude,glob,icase)**/.ssh/**", ":(exclude,glob,icase)**/.aws/credentials", ":(exclude,glob,icase)top.key"}},
		{"rg", []string{"rg", "TOKEN"}, []string{"rg", "--glob=!**/.env*", "--glob=!**/.ssh/**", "--glob=!**/.aws/credentials", "--glob=!top.key", "TOKEN"}},
		{"grep -r", []string{"grep", "-r", "TOKEN", "."}, []string{"grep", "--exclude=.env*", "--exclude-dir=.ssh", "--exclude-dir=.aws", "--exclude=top.key", "-r", "TOKEN", "."}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shieldArgv(tt.argv, pats); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

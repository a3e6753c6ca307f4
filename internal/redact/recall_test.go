package redact

import (
	"strings"
	"testing"
)

// attackAlphabet is the alphabet of the red team's planted secrets
// (cmd/harnessd attack tests: newSecret, 32 letters and digits).
const attackAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// plantedCase is a secret of the red team's checkout as some command shows
// it; the rules alone (no known values) must redact it.
type plantedCase struct {
	name   string
	text   string
	secret string
}

// plantedCases are the values cmd/harnessd/attack_e2e_test.go
// (TestAttackSecrets, TestAttackSecretsThroughStagingAndDiffs) plants where
// redaction by shape has to find them, in the forms the attacks print them:
// its .env (API_TOKEN, DB_PASSWORD), config/.env.local (LOCAL_SECRET), the
// home credentials file, the token in the remote URL and the private key.
func plantedCases() []plantedCase {
	head, head2, local, home, remote, key := fake(101, 32, attackAlphabet), fake(102, 32, attackAlphabet),
		fake(103, 32, attackAlphabet), fake(104, 32, attackAlphabet), fake(105, 32, attackAlphabet), fake(106, 32, attackAlphabet)
	env := "API_TOKEN=" + head + "\nDB_PASSWORD=" + head2 + "\n"
	pem := "-----BEGIN PRIVATE" + " KEY-----\n" + key + key + "\n-----END PRIVATE KEY-----\n"
	url := "https://bob:" + remote + "@git.example/x/y.git"
	return []plantedCase{
		{"cat .env token", env, head},
		{"cat .env password", env, head2},
		{"sort .env", "DB_PASSWORD=" + head2 + "\nAPI_TOKEN=" + head + "\n", head},
		{"grep -r", "./.env:API_TOKEN=" + head, head},
		{"grep -rn", "./.env:1:API_TOKEN=" + head, head},
		{"grep -rn password", "./.env:2:DB_PASSWORD=" + head2, head2},
		{"grep -r -h", "API_TOKEN=" + head, head},
		{"rg", ".env:1:API_TOKEN=" + head, head},
		{"rg column", ".env:1:1:API_TOKEN=" + head, head},
		{"grep context", ".env-2-DB_PASSWORD=" + head2, head2},
		{"git grep rev", "HEAD:.env:1:API_TOKEN=" + head, head},
		{"git grep old rev", "HEAD~1:.env:2:DB_PASSWORD=" + head2, head2},
		{"git show", "+API_TOKEN=" + head + "\n+DB_PASSWORD=" + head2, head},
		{"git diff removed", "-DB_PASSWORD=" + head2, head2},
		{"diff", "> API_TOKEN=" + head, head},
		{"cat -A", "API_TOKEN=" + head + "$", head},
		{"jq rawfile", `"API_TOKEN=` + head + `\nDB_PASSWORD=` + head2 + `\n"`, head2},
		{"env.local", "LOCAL_SECRET=" + local + "\n", local},
		{"staged env.local", "+LOCAL_SECRET=" + local, local},
		{"aws credentials", "aws_secret_access_key = " + home + "\n", home},
		{"grep aws credentials", "/home/u/credentials:1:aws_secret_access_key = " + home, home},
		{"git remote -v", "origin\t" + url + " (fetch)\norigin\t" + url + " (push)\n", remote},
		{"git config --list", "remote.origin.url=" + url + "\n", remote},
		{"git ls-remote --get-url", url + "\n", remote},
		{"private key", pem, key},
		{"head -c of key", pem[:60], key[:60-len("-----BEGIN PRIVATE KEY-----\n")]},
		{"key in git show", "+" + strings.ReplaceAll(strings.TrimSuffix(pem, "\n"), "\n", "\n+"), key},
	}
}

// TestPlantedSecretsRedacted is the recall test: every value the red team
// plants is gone from every form above.
func TestPlantedSecretsRedacted(t *testing.T) {
	r := Default()
	for _, c := range plantedCases() {
		t.Run(c.name, func(t *testing.T) {
			out, n := r.String(c.text)
			if n == 0 || strings.Contains(out, c.secret) || strings.Contains(out, c.secret[:10]) {
				t.Errorf("String(%q) = %q, %d: the planted secret survives", c.text, out, n)
			}
		})
	}
}

package main

// Attacks on the secret denylist through MCP, as an agent would try them
// (issue 27 item 2, issue 28 item 6): the denylist decided only below a
// root (a root that is a .aws, .ssh or .kube directory), hard-link
// laundering through every surface that copies, moves, patches, keeps or
// digests content, and a person's exceptions that must open exactly their
// paths. Each attack has a positive control: the same operation on a file
// that is no secret works.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
)

// dlRepo makes a git repository at dir with files, committed.
func dlRepo(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for rel, body := range files {
		writeFile(t, filepath.Join(dir, rel), body, 0o644)
	}
	testutil.Git(t, dir, "init", "-q", "-b", "main")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
	return dir
}

// dlBase is a canonical temp dir inside the allowed area of the tests'
// daemons (the temp dir).
func dlBase(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// target registers dir as a target (access read or write).
func (a *atk) target(t *testing.T, dir, access string) string {
	t.Helper()
	o := a.tool(t, "target_register", map[string]any{"path": dir, "access": access}).mustWork(t)
	id := o.str("target_id")
	if id == "" {
		t.Fatalf("target_register: no target_id: %s", o)
	}
	return id
}

var dlSeq int

func dlReq(what string) string {
	dlSeq++
	return fmt.Sprintf("dl-%s-%d-%d", what, time.Now().UnixNano(), dlSeq)
}

// refused fails unless o was refused with code, and checks no secret
// came back.
func refused(t *testing.T, o out, code string, secrets ...string) {
	t.Helper()
	if !o.isErr || o.code != code {
		t.Errorf("ATTACK WORKED: want %s, got %s", code, o)
	}
	noLeak(t, o, secrets...)
}

// Root cause: the denylist matched only below a root. Roots that are
// themselves credential directories (built in the temp dir, inside the
// allowed area: the real credential homes of $HOME cannot be granted at
// all) keep their secrets on every surface.
func TestAttackDenylistRootRelative(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	a := newAtk(t)
	secret := newSecret(t)
	home := filepath.Join(dlBase(t), "home")

	t.Run("target is a .aws directory", func(t *testing.T) {
		aws := filepath.Join(home, ".aws")
		writeFile(t, filepath.Join(aws, "credentials"), "[default]\naws_secret_access_key = "+secret+"\n", 0o600)
		writeFile(t, filepath.Join(aws, "notes.txt"), "the region is eu-west-1\n", 0o644)
		tid := a.target(t, aws, "read")
		dst := a.target(t, filepath.Join(dlBase(t)), "write")
		o := a.tool(t, "target_read_file", map[string]any{"target_id": tid, "path": "credentials"})
		refused(t, o, "SECRET_PATH_DENIED", secret)
		if msg := o.str("error.message"); !strings.Contains(msg, "secret_exceptions {repo: "+aws+", paths: [credentials]}") {
			t.Errorf("the refusal does not name the fix: %q", msg)
		}
		noLeak(t, a.tool(t, "target_search", map[string]any{"target_id": tid, "query": secret[:12]}), secret)
		noLeak(t, a.tool(t, "target_search", map[string]any{"target_id": tid, "query": "aws_secret_access_key"}), secret)
		if o := a.tool(t, "target_list_dir", map[string]any{"target_id": tid}).mustWork(t); strings.Contains(o.raw, `"name":"credentials"`) {
			t.Errorf("ATTACK WORKED: target_list_dir lists credentials: %s", o)
		}
		o = a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "credentials", "to_target_id": dst, "to": "stolen.txt", "request_id": dlReq("cp")})
		refused(t, o, "SECRET_PATH_DENIED", secret)
		// Positive controls: the other file reads and copies.
		o = a.tool(t, "target_read_file", map[string]any{"target_id": tid, "path": "notes.txt"}).mustWork(t)
		if !strings.Contains(o.raw, "eu-west-1") {
			t.Errorf("control: notes.txt not read: %s", o)
		}
		a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "notes.txt", "to_target_id": dst, "to": "notes.txt", "request_id": dlReq("cp")}).mustWork(t)
	})

	t.Run("repository inside a .ssh directory", func(t *testing.T) {
		keys := dlRepo(t, filepath.Join(home, ".ssh", "keys"), map[string]string{
			"work_signing": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + secret + "\n-----END OPENSSH PRIVATE KEY-----\n",
			"README.md":    "signing keys " + secret[:16] + "\n",
		})
		id := a.register(t, keys)
		refused(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "work_signing"}), "SECRET_PATH_DENIED", secret)
		refused(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "README.md"}), "SECRET_PATH_DENIED", secret)
		noLeak(t, a.tool(t, "search", map[string]any{"repo_id": id, "query": secret[:12]}), secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"cat", "work_signing"}}), secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"grep", "-r", "-h", "-a", ".", "."}}), secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"git", "show", "HEAD:work_signing"}}), secret)
		noLeak(t, a.tool(t, "context_assemble", map[string]any{"repo_id": id}), secret)
		// Positive control: the same files outside any .ssh read fine.
		plain := dlRepo(t, filepath.Join(home, "keys-notes"), map[string]string{"README.md": "just notes\n"})
		pid := a.register(t, plain)
		if o := a.tool(t, "read_file", map[string]any{"repo_id": pid, "path": "README.md"}).mustWork(t); !strings.Contains(o.raw, "just notes") {
			t.Errorf("control: %s", o)
		}
	})

	t.Run("repository is a .kube directory", func(t *testing.T) {
		kube := dlRepo(t, filepath.Join(home, ".kube"), map[string]string{
			"config":     "users:\n- user:\n    token: " + secret + "\n",
			"other.yaml": "kind: Namespace\n",
		})
		id := a.register(t, kube)
		o := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "config"})
		refused(t, o, "SECRET_PATH_DENIED", secret)
		refused(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"cat", "config"}}), "SECRET_PATH_DENIED", secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"grep", "-r", "token", "."}}), secret)
		noLeak(t, a.tool(t, "search", map[string]any{"repo_id": id, "query": "token"}), secret)
		refused(t, a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("p"),
			"operations": []map[string]any{{"op": "replace", "path": "config", "old_text": "token", "new_text": "t"}}}), "SECRET_PATH_DENIED", secret)
		// A job reads the tree: the sandbox closes config by its
		// absolute path, and the job's output is redacted of its value.
		j := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "cat ./c*g; grep -r -h token . ; cat other.yaml"}})
		j.noLeak(t, secret)
		if !j.refused() && !strings.Contains(j.output(), "Namespace") {
			t.Errorf("control: the job did not read other.yaml: %s", j)
		}
		if o := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "other.yaml"}).mustWork(t); !strings.Contains(o.raw, "Namespace") {
			t.Errorf("control: %s", o)
		}
	})
}

// sum is the hex sha256 of s.
func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// links reports the link count of p (0 when missing).
func links(p string) uint64 {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return 0
	}
	return uint64(st.Nlink)
}

// Root cause: hard-link laundering. A hard link in a checkout or a target
// to a secret outside it (read_file refuses it) must not become a plain
// readable file through a copy, a move, a patch, a delete and its revert,
// nor answer for its content through a digest or a search.
func TestAttackDenylistHardLinks(t *testing.T) {
	need(t, "git")
	t.Parallel()
	a := newAtk(t)
	secret := newSecret(t)
	base := dlBase(t)
	outside := filepath.Join(base, "outside", ".env")
	content := "TOKEN=" + secret + "\n"
	writeFile(t, outside, content, 0o600)
	tgt := filepath.Join(base, "tgt")
	writeFile(t, filepath.Join(tgt, "plain.txt"), "PLAIN=value\n", 0o644)
	repo := dlRepo(t, filepath.Join(base, "repo"), map[string]string{"README.md": "repo\n", "plain.txt": "PLAIN=value\n"})
	for _, l := range []string{filepath.Join(tgt, "notes.txt"), filepath.Join(repo, "notes.txt"), filepath.Join(repo, "doc.txt")} {
		if err := os.Link(outside, l); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	tid := a.target(t, tgt, "write")
	other := a.target(t, filepath.Join(base), "write")
	id := a.register(t, repo)
	intact := func(what string) {
		t.Helper()
		b, err := os.ReadFile(outside)
		if err != nil || string(b) != content {
			t.Errorf("ATTACK WORKED: %s changed the outside secret: %q, %v", what, b, err)
		}
		for _, l := range []string{filepath.Join(tgt, "notes.txt"), filepath.Join(repo, "notes.txt")} {
			if n := links(l); n < 2 {
				t.Errorf("ATTACK WORKED: %s: %s has %d links, want the hard link left as it was", what, l, n)
			}
		}
	}

	t.Run("read_file", func(t *testing.T) {
		refused(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "notes.txt"}), "PATH_NOT_ALLOWED", secret)
		refused(t, a.tool(t, "target_read_file", map[string]any{"target_id": tid, "path": "notes.txt"}), "PATH_NOT_ALLOWED", secret)
	})
	t.Run("target_copy", func(t *testing.T) {
		refused(t, a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "notes.txt", "to": "copy.txt", "request_id": dlReq("cp")}), "PATH_NOT_ALLOWED", secret)
		refused(t, a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "notes.txt", "to_target_id": other, "to": "copy.txt", "request_id": dlReq("cp")}), "PATH_NOT_ALLOWED", secret)
		noFile(t, "target_copy of a hard link", filepath.Join(tgt, "copy.txt"))
		noFile(t, "target_copy of a hard link", filepath.Join(base, "copy.txt"))
		noLeak(t, a.tool(t, "target_read_file", map[string]any{"target_id": tid, "path": "copy.txt"}), secret)
		// Positive control.
		a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "plain.txt", "to": "plain2.txt", "request_id": dlReq("cp")}).mustWork(t)
		intact("target_copy")
	})
	t.Run("target_move", func(t *testing.T) {
		refused(t, a.tool(t, "target_move", map[string]any{"target_id": tid, "from": "notes.txt", "to": "moved.txt", "request_id": dlReq("mv")}), "PATH_NOT_ALLOWED", secret)
		refused(t, a.tool(t, "target_move", map[string]any{"target_id": tid, "from": "notes.txt", "to_target_id": other, "to": "moved.txt", "request_id": dlReq("mv")}), "PATH_NOT_ALLOWED", secret)
		noFile(t, "target_move of a hard link", filepath.Join(tgt, "moved.txt"))
		noFile(t, "target_move of a hard link", filepath.Join(base, "moved.txt"))
		// Writing over a hard link of the target is refused too.
		refused(t, a.tool(t, "target_write_file", map[string]any{"target_id": tid, "path": "notes.txt", "content": "x\n", "request_id": dlReq("w")}), "PATH_NOT_ALLOWED", secret)
		refused(t, a.tool(t, "target_copy", map[string]any{"target_id": tid, "from": "plain.txt", "to": "notes.txt", "overwrite": true, "request_id": dlReq("cp")}), "PATH_NOT_ALLOWED", secret)
		refused(t, a.tool(t, "target_apply_patch", map[string]any{"target_id": tid, "request_id": dlReq("p"),
			"operations": []map[string]any{{"op": "replace", "path": "notes.txt", "old_text": "TOKEN=", "new_text": "T="}}}), "PATH_NOT_ALLOWED", secret)
		a.tool(t, "target_move", map[string]any{"target_id": tid, "from": "plain2.txt", "to": "plain3.txt", "request_id": dlReq("mv")}).mustWork(t)
		intact("target_move")
	})
	t.Run("apply_patch", func(t *testing.T) {
		for _, opn := range []map[string]any{
			{"op": "replace", "path": "notes.txt", "old_text": "TOKEN=", "new_text": "T="},
			{"op": "replace", "path": "notes.txt", "old_text": secret[:8], "new_text": "x"}, // an oracle: PATCH_CONFLICT or not
			{"op": "write", "path": "notes.txt", "content": "x\n"},
			{"op": "create", "path": "notes.txt", "content": "x\n", "overwrite": true},
		} {
			refused(t, a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("p"), "operations": []map[string]any{opn}}), "PATH_NOT_ALLOWED", secret)
		}
		a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("p"),
			"operations": []map[string]any{{"op": "replace", "path": "plain.txt", "old_text": "value", "new_text": "VALUE"}}}).mustWork(t)
		intact("apply_patch")
	})
	t.Run("patch_proposal_validate", func(t *testing.T) {
		// A dry run's verdict must not tell whether old_text occurs in the
		// hard link's content (PATCH_CONFLICT or valid).
		verdict := func(old string) string {
			o := a.tool(t, "patch_proposal_validate", map[string]any{"repo_id": id, "proposals": []map[string]any{{"id": "p",
				"operations": []map[string]any{{"op": "replace", "path": "notes.txt", "old_text": old, "new_text": "x"}}}}})
			noLeak(t, o, secret)
			ps, _ := o.m["proposals"].([]any)
			if len(ps) != 1 {
				t.Fatalf("patch_proposal_validate: %s", o)
			}
			p, _ := ps[0].(map[string]any)
			e, _ := p["error"].(map[string]any)
			code, _ := e["code"].(string)
			if p["valid"] == true || code != "PATH_NOT_ALLOWED" {
				t.Errorf("ATTACK WORKED: the proposal on a hard link: valid %v, code %q: %s", p["valid"], code, o)
			}
			return code
		}
		if verdict(secret[:8]) != verdict("not-in-the-file") {
			t.Errorf("ATTACK WORKED: the verdicts differ with the content")
		}
		// Positive control.
		o := a.tool(t, "patch_proposal_validate", map[string]any{"repo_id": id, "proposals": []map[string]any{{"id": "p",
			"operations": []map[string]any{{"op": "replace", "path": "plain.txt", "old_text": "PLAIN", "new_text": "x"}}}}}).mustWork(t)
		if !strings.Contains(o.raw, `"valid":true`) {
			t.Errorf("control: %s", o)
		}
	})
	t.Run("apply_patch delete then revert", func(t *testing.T) {
		o := a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("del"), "operations": []map[string]any{{"op": "delete", "path": "notes.txt"}}})
		refused(t, o, "PATH_NOT_ALLOWED", secret)
		if rid := o.str("receipt.receipt_id"); rid != "" {
			noLeak(t, a.tool(t, "revert", map[string]any{"repo_id": id, "receipt_id": rid, "request_id": dlReq("rv")}), secret)
		}
		refused(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "notes.txt"}), "PATH_NOT_ALLOWED", secret)
		// No pre-image holds the secret: a revert can never write it back.
		_ = filepath.WalkDir(a.dataDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(p, "preimage") {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil {
				if how := leakIn(secret, b); how != "" {
					t.Errorf("ATTACK WORKED: the pre-image %s holds the secret (%s)", p, how)
				}
			}
			return nil
		})
		// Positive control: a plain file deleted and reverted comes back.
		o = a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("del"), "operations": []map[string]any{{"op": "delete", "path": "README.md"}}}).mustWork(t)
		rid := o.str("receipt.receipt_id")
		if rid == "" {
			rid = o.str("receipt_id")
		}
		a.tool(t, "revert", map[string]any{"repo_id": id, "receipt_id": rid, "request_id": dlReq("rv")}).mustWork(t)
		if b, err := os.ReadFile(filepath.Join(repo, "README.md")); err != nil || string(b) != "repo\n" {
			t.Errorf("control: README.md after the revert: %q, %v", b, err)
		}
		intact("apply_patch delete")
	})
	t.Run("run_verify digest", func(t *testing.T) {
		run := a.tool(t, "run_start", map[string]any{"goal": "digest oracle", "repo_id": id}).mustWork(t)
		rid := run.str("run_id")
		verify := func(stage, path, digest string) out {
			t.Helper()
			a.tool(t, "run_claim", map[string]any{"run_id": rid, "stage": stage, "claim": "the file is as claimed",
				"evidence": []map[string]any{{"kind": "file", "path": path, "sha256": digest}}}).mustWork(t)
			return a.tool(t, "run_verify", map[string]any{"run_id": rid, "stage": stage})
		}
		right, wrong := verify("right", "doc.txt", sum(content)), verify("wrong", "doc.txt", sum("TOKEN=guess\n"))
		for _, o := range []out{right, wrong} {
			noLeak(t, o, secret)
			if strings.Contains(o.raw, `"passed":true`) {
				t.Errorf("ATTACK WORKED: run_verify verified the hard link's content: %s", o)
			}
		}
		if strings.Contains(wrong.raw, sum(content)[:8]) {
			t.Errorf("ATTACK WORKED: run_verify names the secret's digest: %s", wrong)
		}
		if strings.Contains(right.raw, "has the claimed") || strings.Contains(wrong.raw, "has sha256") {
			t.Errorf("ATTACK WORKED: the verdicts tell the right digest from a wrong one:\n%s\n%s", right, wrong)
		}
		// Receipt evidence: a file a receipt wrote, replaced since by a
		// hard link (what a writing job could do), is no oracle either.
		w := a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": dlReq("w"),
			"operations": []map[string]any{{"op": "write", "path": "guess.txt", "content": content}}}).mustWork(t)
		receipt := w.str("receipt.receipt_id")
		if receipt == "" {
			receipt = w.str("receipt_id")
		}
		g := filepath.Join(repo, "guess.txt")
		if err := os.Remove(g); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(outside, g); err != nil {
			t.Fatal(err)
		}
		a.tool(t, "run_claim", map[string]any{"run_id": rid, "stage": "receipt", "claim": "wrote it",
			"evidence": []map[string]any{{"kind": "receipt", "receipt_id": receipt}}}).mustWork(t)
		o := a.tool(t, "run_verify", map[string]any{"run_id": rid, "stage": "receipt"})
		noLeak(t, o, secret)
		if strings.Contains(o.raw, `"passed":true`) {
			t.Errorf("ATTACK WORKED: a receipt verified through a hard link to the secret: %s", o)
		}
		// Positive control: a plain file's digest verifies.
		b, _ := os.ReadFile(filepath.Join(repo, "plain.txt"))
		if o := verify("plain", "plain.txt", sum(string(b))); !strings.Contains(o.raw, `"passed":true`) {
			t.Errorf("control: %s", o)
		}
	})
	t.Run("git_stage and git_diff", func(t *testing.T) {
		refused(t, a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": dlReq("st"), "paths": []string{"notes.txt"}}), "PATH_NOT_ALLOWED", secret)
		// "." stages every change but the hard links (and the secrets).
		o := a.tool(t, "git_stage", map[string]any{"repo_id": id, "request_id": dlReq("st"), "paths": []string{"."}})
		noLeak(t, o, secret)
		noLeak(t, a.tool(t, "git_diff", map[string]any{"repo_id": id, "staged": true}), secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"git", "diff", "--cached"}}), secret)
		noLeak(t, a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": []string{"git", "show", ":notes.txt"}}), secret)
		if out := gitq(t, repo, "ls-files", "--stage", "--", "notes.txt", "doc.txt", "guess.txt"); strings.TrimSpace(out) != "" {
			t.Errorf("ATTACK WORKED: a hard link was staged: %q", out)
		}
		if out := gitq(t, repo, "diff", "--cached", "--name-only"); !strings.Contains(out, "plain.txt") {
			t.Errorf("control: plain.txt's change was not staged: %q (%s)", out, o)
		}
		intact("git_stage")
	})
	t.Run("search", func(t *testing.T) {
		for _, q := range []string{secret[:12], "TOKEN="} {
			o := a.tool(t, "search", map[string]any{"repo_id": id, "query": q})
			noLeak(t, o, secret)
			if strings.Contains(o.raw, `"path":"notes.txt"`) || strings.Contains(o.raw, `"path":"doc.txt"`) {
				t.Errorf("ATTACK WORKED: search matched a hard link: %s", o)
			}
			noLeak(t, a.tool(t, "target_search", map[string]any{"target_id": tid, "query": q}), secret)
		}
		if o := a.tool(t, "search", map[string]any{"repo_id": id, "query": "PLAIN="}).mustWork(t); !strings.Contains(o.raw, "plain.txt") {
			t.Errorf("control: %s", o)
		}
	})
}

// Root cause: only the embedding API could change the denylist. A person's
// exception (policy secret_exceptions) opens exactly its paths of one
// repository, for reads, search, commands and jobs; the files beside them
// stay closed, and a reload that drops it closes them again.
func TestAttackDenylistExceptions(t *testing.T) {
	need(t, "git", "sh")
	t.Parallel()
	envSecret, otherSecret, marker := newSecret(t), newSecret(t), "FIXTURE"+newSecret(t)
	repo := dlRepo(t, filepath.Join(dlBase(t), "jwt"), map[string]string{
		"test/key.pem":   "-----BEGIN PUBLIC KEY-----\n" + marker + "\n-----END PUBLIC KEY-----\n",
		"test/other.pem": "-----BEGIN PUBLIC KEY-----\nsecond fixture\n-----END PUBLIC KEY-----\n",
		"test/.env":      "TOKEN=" + envSecret + "\n",
		"other/key.pem":  "KEY=" + otherSecret + "\n",
		"main.go":        "package main\n",
	})
	dataDir := t.TempDir()
	polPath := filepath.Join(dataDir, "policy.yaml")
	excepted := "version: 1\nsecret_exceptions:\n  - repo: " + repo + "\n    paths: [\"test/*.pem\"]\n    justification: golang-jwt's test fixtures\n"
	writeFile(t, polPath, excepted, 0o600)
	a := newAtkAt(t, dataDir)
	id := a.register(t, repo)

	// The fixtures are open: read, searched, read by commands and jobs.
	o := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "test/key.pem"}).mustWork(t)
	if !strings.Contains(o.raw, marker) || strings.Contains(o.raw, "REDACTED") {
		t.Errorf("read_file of the excepted fixture: %s", o)
	}
	if o := a.tool(t, "search", map[string]any{"repo_id": id, "query": marker}).mustWork(t); !strings.Contains(o.raw, "test/key.pem") {
		t.Errorf("search for the fixture: %s", o)
	}
	if o := a.run(t, id, "cat", "test/key.pem", "test/other.pem").mustWork(t); !strings.Contains(o.stdout(), marker) {
		t.Errorf("cat of the fixtures: %s", o)
	}
	j := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "test -s test/key.pem && test -s test/other.pem && cat test/key.pem"}})
	if j.refused() || j.state() != "succeeded" || !strings.Contains(j.output(), marker) {
		t.Errorf("the suite's job does not see the fixtures: %s", j)
	}
	// In a job's own worktree too: it has its repository's exceptions.
	jw := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "cat test/key.pem; d=.e; cat test/${d}nv; true"}, "isolation": "worktree"})
	if jw.refused() || !strings.Contains(jw.output(), marker) {
		t.Errorf("a worktree job does not see the fixtures: %s", jw)
	}
	jw.noLeak(t, envSecret)

	// Beside them everything stays closed, whatever the way in.
	for _, p := range []string{"test/.env", "other/key.pem"} {
		o := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": p})
		refused(t, o, "SECRET_PATH_DENIED", envSecret, otherSecret)
		if msg := o.str("error.message"); !strings.Contains(msg, "secret_exceptions {repo: "+repo+", paths: ["+p+"]}") {
			t.Errorf("the refusal of %s does not name the fix: %q", p, msg)
		}
	}
	refused(t, a.run(t, id, "cat", "test/.env"), "SECRET_PATH_DENIED", envSecret)
	// The shell's * skips dot files: the fixtures, never test/.env.
	if o := a.run(t, id, "sh", "-c", "cat test/*"); !strings.Contains(o.stdout(), marker) {
		t.Errorf("sh -c 'cat test/*' does not show the fixtures: %s", o)
	} else {
		noLeak(t, o, envSecret, otherSecret)
	}
	refused(t, a.run(t, id, "sh", "-c", "cat test/.e*"), "SECRET_PATH_DENIED", envSecret)
	refused(t, a.run(t, id, "grep", "-r", "TOKEN", "test/*"), "SECRET_PATH_DENIED", envSecret)
	noLeak(t, a.tool(t, "search", map[string]any{"repo_id": id, "query": envSecret[:12]}), envSecret)
	noLeak(t, a.tool(t, "search", map[string]any{"repo_id": id, "query": "KEY="}), otherSecret)
	noLeak(t, a.run(t, id, "grep", "-r", "-h", "-e", "TOKEN", "-e", "KEY", "."), envSecret, otherSecret)
	noLeak(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "Test/key.pem"}), envSecret)
	// Names the argument checks cannot see: the sandbox closes the files.
	jb := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "d=.e; cat test/${d}nv; grep -r -h -e TOKEN -e KEY . ; f=ot; cat ${f}her/key.pem; true"}})
	jb.noLeak(t, envSecret, otherSecret)

	// The person drops the exception: the fixtures close again at once.
	writeFile(t, polPath, "version: 1\n", 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.human.Post(ctx, "/v1/policy/reload", map[string]any{}); err != nil {
		t.Fatalf("policy reload: %v", err)
	}
	refused(t, a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "test/key.pem"}), "SECRET_PATH_DENIED", marker)
	noLeak(t, a.tool(t, "search", map[string]any{"repo_id": id, "query": marker}), marker)
	jc := a.job(t, id, map[string]any{"argv": []string{"sh", "-c", "d=te; cat ${d}st/key.pem; true"}})
	jc.noLeak(t, marker)
}

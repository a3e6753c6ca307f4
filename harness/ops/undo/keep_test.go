package undo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/preimage"
)

// Keep refuses a secret path (by the root's absolute path) and a hard link
// even if a resolver let one through: their bytes never reach the store.
func TestKeepNeverStoresASecretPath(t *testing.T) {
	deny, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		t.Fatal(err)
	}
	store, _ := preimage.Open(preimage.Config{})
	env := &op.Env{Deny: deny, PreImages: store}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The root is a credential directory (<tmp>/home/.aws): "credentials"
	// is a secret by its absolute path.
	dir := filepath.Join(base, "home", ".aws")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "outside.env")
	if err := os.WriteFile(outside, []byte("TOKEN=s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "notes.txt")
	if err := os.Link(outside, linked); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	root, err := pathsafe.NewRoot(dir, env.DenyFor(dir))
	if err != nil {
		t.Fatal(err)
	}
	r := &op.Receipt{}
	keep := Keep(env, root, r)
	for _, p := range []string{".env", "config/.env", "id_rsa", "secrets/prod.pem", "credentials"} {
		if _, secret := root.Deny().Match(p); !secret {
			t.Fatalf("%s is no secret of %s", p, dir)
		}
		err := keep(patch.PreImage{Rel: p, Existed: true, Data: []byte("TOKEN=s3cret"), Mode: 0o600, Digest: preimage.Digest([]byte("TOKEN=s3cret"))})
		if errs.CodeOf(err) != errs.SecretPathDenied {
			t.Errorf("%s: %v, want SECRET_PATH_DENIED", p, err)
		}
	}
	// A hard link to a file outside the root is never kept either.
	fi, err := os.Lstat(linked)
	if err != nil {
		t.Fatal(err)
	}
	err = keep(patch.PreImage{Rel: "notes.txt", Existed: true, Data: []byte("TOKEN=s3cret\n"), Mode: 0o600, Digest: preimage.Digest([]byte("TOKEN=s3cret\n")), Info: fi})
	if errs.CodeOf(err) != errs.PathNotAllowed {
		t.Errorf("hard link: %v, want PATH_NOT_ALLOWED", err)
	}
	if st := store.Stats(); st.Count != 0 || len(r.PreImages) != 0 {
		t.Fatalf("a secret pre-image was kept: %+v %+v", st, r.PreImages)
	}
	// A plain file is kept once, a created one is "absent", a link is named
	// but not kept.
	data := []byte("hello")
	for _, pi := range []patch.PreImage{
		{Rel: "a.txt", Existed: true, Data: data, Mode: 0o644, Digest: preimage.Digest(data)},
		{Rel: "a.txt", Existed: true, Data: []byte("later"), Mode: 0o644},
		{Rel: "new.txt"},
		{Rel: "l", Existed: true, Link: true, Data: []byte("target"), Mode: os.ModePerm},
	} {
		if err := keep(pi); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.PreImages) != 3 || r.PreImages[0].SHA256 != preimage.Digest(data) || r.PreImages[0].Mode != "0644" ||
		!r.PreImages[1].Absent || !r.PreImages[2].Link || r.PreImages[2].NotKept == "" {
		t.Fatalf("refs %+v", r.PreImages)
	}
	if st := store.Stats(); st.Count != 1 {
		t.Fatalf("store %+v, want the one regular file", st)
	}
}

package undo

import (
	"os"
	"testing"

	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/preimage"
)

// Keep refuses a secret path even if a resolver let one through: its
// bytes never reach the store.
func TestKeepNeverStoresASecretPath(t *testing.T) {
	deny, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
	if err != nil {
		t.Fatal(err)
	}
	store, _ := preimage.Open(preimage.Config{})
	env := &op.Env{Deny: deny, PreImages: store}
	r := &op.Receipt{}
	keep := Keep(env, r)
	for _, p := range []string{".env", "config/.env", "id_rsa", "secrets/prod.pem"} {
		if _, secret := deny.Match(p); !secret {
			continue
		}
		err := keep(patch.PreImage{Rel: p, Existed: true, Data: []byte("TOKEN=s3cret"), Mode: 0o600, Digest: preimage.Digest([]byte("TOKEN=s3cret"))})
		if errs.CodeOf(err) != errs.SecretPathDenied {
			t.Errorf("%s: %v, want SECRET_PATH_DENIED", p, err)
		}
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

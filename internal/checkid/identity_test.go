package checkid

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDefinitionDigest(t *testing.T) {
	base := Definition{Argv: []string{"go", "test", "./..."}, Cwd: "src", Effects: []string{"network", "workspace_write"}, TimeoutMs: 60000}
	tests := []struct {
		name string
		def  Definition
		same bool
	}{
		{"identical", base, true},
		{"effects reordered", Definition{Argv: base.Argv, Cwd: "src", Effects: []string{"workspace_write", "network"}, TimeoutMs: 60000}, true},
		{"effects duplicated", Definition{Argv: base.Argv, Cwd: "src", Effects: []string{"network", "workspace_write", "network"}, TimeoutMs: 60000}, true},
		{"cwd not clean", Definition{Argv: base.Argv, Cwd: "src/./", Effects: base.Effects, TimeoutMs: 60000}, true},
		{"argv changed", Definition{Argv: []string{"go", "test", "-race", "./..."}, Cwd: "src", Effects: base.Effects, TimeoutMs: 60000}, false},
		{"argv joined", Definition{Argv: []string{"go", "test ./..."}, Cwd: "src", Effects: base.Effects, TimeoutMs: 60000}, false},
		{"cwd changed", Definition{Argv: base.Argv, Cwd: "lib", Effects: base.Effects, TimeoutMs: 60000}, false},
		{"effect removed", Definition{Argv: base.Argv, Cwd: "src", Effects: []string{"network"}, TimeoutMs: 60000}, false},
		{"timeout changed", Definition{Argv: base.Argv, Cwd: "src", Effects: base.Effects, TimeoutMs: 1000}, false},
	}
	want := base.Digest()
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("digest %q, want sha256:<64 hex>", want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.def.Digest()
			if (got == want) != tt.same {
				t.Fatalf("got %s, want same=%v as %s", got, tt.same, want)
			}
		})
	}
}

func TestDefinitionDigestCanonicalForms(t *testing.T) {
	tests := []struct {
		name string
		a, b Definition
		same bool
	}{
		{"empty and dot cwd", Definition{Cwd: ""}, Definition{Cwd: "."}, true},
		{"nil and empty effects", Definition{}, Definition{Effects: []string{}}, true},
		{"nil and empty argv", Definition{}, Definition{Argv: []string{}}, true},
		{"empty arg counts", Definition{Argv: []string{"a"}}, Definition{Argv: []string{"a", ""}}, false},
		{"invalid utf-8 kept apart", Definition{Argv: []string{"\xff"}}, Definition{Argv: []string{"\xfe"}}, false},
		{"negative timeout", Definition{TimeoutMs: -1}, Definition{TimeoutMs: 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Digest() == tt.b.Digest(); got != tt.same {
				t.Fatalf("same = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestCompute(t *testing.T) {
	rev := Revision{Tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", Dirty: map[string]string{"a.go": sha("a")}}
	rev.Digest = rev.ComputeDigest()
	def := Definition{Argv: []string{"go", "test"}, TimeoutMs: 1000}
	env := Env{Vars: map[string]string{"GOFLAGS": ""}, Tools: map[string]string{"go": "go version go1.26.8 linux/amd64"}}
	env.Digest = env.ComputeDigest()
	base := Compute(rev, def, env)
	if base.Schema != SchemaVersion || base.Revision != rev.Digest || base.Env != env.Digest || base.Definition != def.Digest() {
		t.Fatalf("parts = %+v, want the parts' digests and schema %d", base, SchemaVersion)
	}

	// Empty stored digests are computed from the fields.
	if got := Compute(Revision{Tree: rev.Tree, Dirty: rev.Dirty}, def, Env{Vars: env.Vars, Tools: env.Tools}); got != base {
		t.Fatalf("without stored digests: got %+v, want %+v", got, base)
	}

	withRev := func(dirty map[string]string) Revision {
		r := Revision{Tree: rev.Tree, Dirty: dirty}
		r.Digest = r.ComputeDigest()
		return r
	}
	withEnv := func(vars map[string]string, tools map[string]string) Env {
		e := Env{Vars: vars, Tools: tools}
		e.Digest = e.ComputeDigest()
		return e
	}
	tests := []struct {
		name string
		id   Identity
		same bool
	}{
		{"same", Compute(rev, def, env), true},
		{"file content", Compute(withRev(map[string]string{"a.go": sha("b")}), def, env), false},
		{"file added", Compute(withRev(map[string]string{"a.go": sha("a"), "b.go": DirtyDeleted}), def, env), false},
		{"argv", Compute(rev, Definition{Argv: []string{"go", "vet"}, TimeoutMs: 1000}, env), false},
		{"cwd", Compute(rev, Definition{Argv: def.Argv, Cwd: "x", TimeoutMs: 1000}, env), false},
		{"timeout", Compute(rev, Definition{Argv: def.Argv, TimeoutMs: 2000}, env), false},
		{"variable", Compute(rev, def, withEnv(map[string]string{"GOFLAGS": "-race"}, env.Tools)), false},
		{"variable unset", Compute(rev, def, withEnv(map[string]string{}, env.Tools)), false},
		{"tool", Compute(rev, def, withEnv(env.Vars, map[string]string{"go": "go version go1.27"})), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.Digest == base.Digest; got != tt.same {
				t.Fatalf("same digest = %v, want %v", got, tt.same)
			}
		})
	}

	// Effects order never matters.
	a := Compute(rev, Definition{Argv: def.Argv, Effects: []string{"network", "workspace_write"}}, env)
	b := Compute(rev, Definition{Argv: def.Argv, Effects: []string{"workspace_write", "network"}}, env)
	if a.Digest != b.Digest {
		t.Fatalf("effects order changed the identity: %s vs %s", a.Digest, b.Digest)
	}
}

func TestDigestMapEncodingIsUnambiguous(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]string
	}{
		{"key/value boundary", map[string]string{"ab": "c"}, map[string]string{"a": "bc"}},
		{"two entries vs one", map[string]string{"a": "b", "c": "d"}, map[string]string{"a": "b\x00c"}},
		{"empty value vs absent", map[string]string{"a": ""}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ra := Revision{Dirty: tt.a}.ComputeDigest()
			rb := Revision{Dirty: tt.b}.ComputeDigest()
			if ra == rb {
				t.Fatalf("got equal revision digests %s", ra)
			}
			ea := Env{Vars: tt.a}.ComputeDigest()
			eb := Env{Vars: tt.b}.ComputeDigest()
			if ea == eb {
				t.Fatalf("got equal env digests %s", ea)
			}
		})
	}
	// Vars and Tools are separate sections.
	if (Env{Vars: map[string]string{"x": "1"}}).ComputeDigest() == (Env{Tools: map[string]string{"x": "1"}}).ComputeDigest() {
		t.Fatal("a variable and a tool with the same name and value gave the same digest")
	}
}

func TestIdentityJSON(t *testing.T) {
	id := Compute(Revision{Dirty: map[string]string{}}, Definition{Argv: []string{"make"}}, Env{})
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	var back Identity
	if err := json.Unmarshal(b, &back); err != nil || back != id {
		t.Fatalf("round trip: got %+v (%v), want %+v", back, err, id)
	}
	for _, key := range []string{`"digest"`, `"revision"`, `"definition"`, `"env"`, `"schema":1`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

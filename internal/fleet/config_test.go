package fleet

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestParseStore(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string // a part of the message
	}{
		{"etcd://h1:2379,h2:2379", []string{"http://h1:2379", "http://h2:2379"}, ""},
		{"etcd://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}, ""},
		{"etcd://h1", []string{"http://h1:2379"}, ""},
		{"etcds://h1:2379", []string{"https://h1:2379"}, ""},
		{"etcd://[::1]:2379,[fe80::1]", []string{"http://[::1]:2379", "http://[fe80::1]:2379"}, ""},
		{"", nil, "want etcd://host:port"},
		{"http://h1:2379", nil, "want etcd://host:port"},
		{"h1:2379", nil, "want etcd://host:port"},
		{"etcd://", nil, "names no etcd host"},
		{"etcd://h1:2379,", nil, "empty host"},
		{"etcd://,h1:2379", nil, "empty host"},
		{"etcd://h1:http", nil, "is not a number"},
		{"etcd://h1:0", nil, "is not a number"},
		{"etcd://h1:65536", nil, "is not a number"},
		{"etcd://h1:02379", nil, "is not a number"},
		{"etcd://:2379", nil, "no valid host"},
		{"etcd://h1:2379/path", nil, "is not a number"},
		{"etcd://user@h1:2379", nil, "no valid host"},
		{"etcd://h1:2379,h1:2379", nil, "twice"},
		{"etcd://::1", nil, "is not host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseStore(tt.in)
			if tt.wantErr != "" {
				if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStore(%q) = %v, %v; want INVALID_ARGUMENT containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ParseStore(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func FuzzParseStore(f *testing.F) {
	for _, s := range []string{"etcd://h1:2379,h2:2379", "etcds://[::1]", "etcd://h:1,", "etcd://a:b:c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseStore(s)
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("ParseStore(%q) error %v is not INVALID_ARGUMENT", s, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("ParseStore(%q) answered no endpoint and no error", s)
		}
		// Every endpoint is a valid Config endpoint.
		cfg := Config{Endpoints: got, Node: "n"}
		if err := cfg.validate(); err != nil {
			t.Fatalf("ParseStore(%q) = %v, which Config rejects: %v", s, got, err)
		}
	})
}

func TestValidIdentity(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		in string
		ok bool
	}{
		{"sha256:" + hex, true},
		{"sha256:" + strings.ToUpper(hex), false},
		{"sha256:" + hex[:63], false},
		{"sha256:" + hex + "0", false},
		{"sha256:" + hex[:62] + "/x", false},
		{"sha256:" + hex[:60] + "/../", false},
		{hex, false},
		{"md5:" + hex, false},
		{"", false},
	}
	for _, tt := range tests {
		h, err := ValidIdentity(tt.in)
		if tt.ok != (err == nil) || (err != nil && errs.CodeOf(err) != errs.InvalidArgument) {
			t.Errorf("ValidIdentity(%q) = %q, %v; want ok=%v", tt.in, h, err, tt.ok)
		}
		if tt.ok && h != hex {
			t.Errorf("ValidIdentity(%q) hex = %q", tt.in, h)
		}
	}
	d, err := ActionDigest("sha256:" + hex)
	if err != nil || d.Hash != hex || d.Size != int64(len("sha256:"+hex)) {
		t.Fatalf("ActionDigest = %+v, %v", d, err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := func() Config { return Config{Endpoints: []string{"http://127.0.0.1:2379"}, Node: "n1"} }
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, "no etcd endpoints"},
		{"etcd scheme endpoint", func(c *Config) { c.Endpoints = []string{"etcd://h:2379"} }, "is not an http(s)://host:port URL"},
		{"no node", func(c *Config) { c.Node = "" }, "pick --node-name"},
		{"node with slash", func(c *Config) { c.Node = "a/b" }, "pick --node-name"},
		{"node too long", func(c *Config) { c.Node = strings.Repeat("n", 65) }, "pick --node-name"},
		{"node 64", func(c *Config) { c.Node = strings.Repeat("n", 64) }, ""},
		{"ttl 1s", func(c *Config) { c.TTL = time.Second }, "below the minimum 2s"},
		{"ttl 2.5s", func(c *Config) { c.TTL = 2500 * time.Millisecond }, "whole number of seconds"},
		{"ttl 2s", func(c *Config) { c.TTL = 2 * time.Second }, ""},
		{"prefix relative", func(c *Config) { c.Prefix = "harnessd" }, "must start with /"},
		{"prefix no slash", func(c *Config) { c.Prefix = "/team" }, ""},
		{"advertise bad", func(c *Config) { c.Advertise = "node1:8080" }, "advertise URL"},
		{"advertise ok", func(c *Config) { c.Advertise = "http://node1:8080/" }, ""},
		{"retention 1s", func(c *Config) { c.Retention = time.Second }, "retention 1s is below 4s"},
		{"inline too big", func(c *Config) { c.InlineBlobMax = 1 << 20 }, "inline blob max"},
		{"inline negative", func(c *Config) { c.InlineBlobMax = -1 }, "inline blob max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(&c)
			err := c.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate = %v", err)
				}
				if c.TTL < MinTTL || c.DialTimeout <= 0 || c.Logger == nil || !strings.HasSuffix(c.Prefix, "/") || c.InlineBlobMax <= 0 || c.Retention != DefaultRetention || strings.HasSuffix(c.Advertise, "/") {
					t.Fatalf("defaults not filled: %+v", c)
				}
				return
			}
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate = %v, want INVALID_ARGUMENT containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	k := keys{"/p/"}
	id := "sha256:" + strings.Repeat("a", 64)
	if got := k.run(id); got != "/p/check/"+id+"/run" {
		t.Fatalf("run = %q", got)
	}
	if got := k.result(id); got != "/p/check/"+id+"/result" {
		t.Fatalf("result = %q", got)
	}
	if got := k.member("n1"); got != "/p/members/n1" {
		t.Fatalf("member = %q", got)
	}
	tests := map[string]string{
		k.run(id):                     id,
		k.result(id):                  "",
		"/p/check/" + id + "/x/run":   "",
		"/q/check/" + id + "/run":     "",
		k.ac(strings.Repeat("a", 64)): "",
	}
	for key, want := range tests {
		if got := k.identityOfRun(key); got != want {
			t.Errorf("identityOfRun(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestActionRecordRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	c := Claim{Identity: "sha256:" + strings.Repeat("c", 64), Token: 1 << 40, RunID: "fr-1", Node: "n1"}
	o := Outcome{ExitCode: 0, Passed: true, Stdout: "out", Stderr: "", Summary: []string{"ok a", "ok b"},
		StartedAt: now.Add(-time.Second), FinishedAt: now, Path: "durable", RepoID: "r", JobID: "j"}
	rec := recordOf(c, o)
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalActionRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != c.Token || got.RunID != "fr-1" || got.Node != "n1" || !got.Passed || got.Path != "durable" ||
		!slices.Equal(got.Summary, o.Summary) || !got.FinishedAt.Equal(now) || got.Stdout != DigestOf([]byte("out")) || got.JobID != "j" {
		t.Fatalf("round trip = %+v, want %+v", got, rec)
	}
	if out := got.outcome([]byte("out"), nil); out.Stdout != "out" || !out.Passed || out.RepoID != "r" {
		t.Fatalf("outcome = %+v", out)
	}
	for _, bad := range [][]byte{[]byte("not a proto \xff\xff"), {}} {
		if _, err := UnmarshalActionRecord(bad); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("UnmarshalActionRecord(%q) = %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}

func TestLostErrorNamesTheTimes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := lostError(at, at.Add(10*time.Second), at.Add(time.Second))
	want := "LEASE_LOST: this node's fleet session expired at 2026-01-02T03:04:05.000Z; it rejoins at 2026-01-02T03:04:15.000Z with a new epoch; retry then"
	if err.Error() != want {
		t.Fatalf("lostError = %q, want %q", err, want)
	}
	err = lostError(at, at.Add(10*time.Second), at.Add(time.Minute))
	if !strings.Contains(err.Error(), "it is rejoining") {
		t.Fatalf("lostError past the rejoin time = %q", err)
	}
}

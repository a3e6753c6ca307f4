package testutil

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestRequiredFeatures(t *testing.T) {
	tests := []struct {
		in      string
		want    []Feature
		wantErr string
	}{
		{in: "", want: nil},
		{in: "0", want: nil},
		{in: "1", want: []Feature{Landlock, UserNS, Seccomp}},
		{in: " 1 ", want: []Feature{Landlock, UserNS, Seccomp}},
		{in: "cgroup", want: []Feature{Cgroup}},
		{in: "landlock, SECCOMP,landlock", want: []Feature{Landlock, Seccomp}},
		{in: "landlock,userns,seccomp,cgroup", want: []Feature{Landlock, UserNS, Seccomp, Cgroup}},
		{in: "yes", wantErr: `unknown feature yes: use "1" (landlock,userns,seccomp) or a comma-separated list of landlock, userns, seccomp, cgroup`},
		{in: "landlock,,seccomp", wantErr: "unknown feature "},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := RequiredFeatures(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RequiredFeatures(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("RequiredFeatures(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// recorder is a testing.TB whose Skip and Fatal stop the helper as the
// real ones do (without ending the calling test) and remember how.
type recorder struct {
	testing.TB
	outcome string // "", "skip" or "fail"
	msg     string
}

type stopped struct{}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.outcome, r.msg = "skip", fmt.Sprint(args...)
	panic(stopped{})
}
func (r *recorder) Fatal(args ...any) {
	r.outcome, r.msg = "fail", fmt.Sprint(args...)
	panic(stopped{})
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.outcome, r.msg = "fail", fmt.Sprintf(format, args...)
	panic(stopped{})
}

func (r *recorder) run(f func()) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopped); !ok {
				panic(v)
			}
		}
	}()
	f()
}

func TestNeedSandbox(t *testing.T) {
	tests := []struct {
		env     string
		what    Feature
		have    bool
		outcome string
		msg     []string // the message contains each
	}{
		{env: "", what: Landlock, have: true, outcome: ""},
		{env: "1", what: UserNS, have: true, outcome: ""},
		{env: "", what: Landlock, have: false, outcome: "skip", msg: []string{"no landlock here: the kernel says no", "HARNESSD_REQUIRE_SANDBOX=1 makes this a failure"}},
		{env: "0", what: Seccomp, have: false, outcome: "skip", msg: []string{"no seccomp here"}},
		{env: "1", what: Landlock, have: false, outcome: "fail", msg: []string{"no landlock here: the kernel says no", "HARNESSD_REQUIRE_SANDBOX=1 requires it"}},
		{env: "1", what: UserNS, have: false, outcome: "fail", msg: []string{"no userns here"}},
		{env: "1", what: Seccomp, have: false, outcome: "fail", msg: []string{"no seccomp here"}},
		// CI machines often lack a delegated cgroup v2: "1" does not
		// require it, a list naming it does.
		{env: "1", what: Cgroup, have: false, outcome: "skip", msg: []string{"no cgroup here", "HARNESSD_REQUIRE_SANDBOX=cgroup makes this a failure"}},
		{env: "cgroup", what: Cgroup, have: false, outcome: "fail", msg: []string{"HARNESSD_REQUIRE_SANDBOX=cgroup requires it"}},
		{env: "cgroup", what: Landlock, have: false, outcome: "skip"},
		{env: "true", what: Landlock, have: false, outcome: "fail", msg: []string{"unknown feature true"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%q/%s/have=%v", RequireSandboxEnv, tt.env, tt.what, tt.have), func(t *testing.T) {
			t.Setenv(RequireSandboxEnv, tt.env)
			r := &recorder{TB: t}
			r.run(func() { NeedSandbox(r, tt.what, tt.have, "the kernel says no") })
			if r.outcome != tt.outcome {
				t.Fatalf("outcome %q (%q), want %q", r.outcome, r.msg, tt.outcome)
			}
			for _, m := range tt.msg {
				if !strings.Contains(r.msg, m) {
					t.Errorf("message %q, want it to contain %q", r.msg, m)
				}
			}
		})
	}
}

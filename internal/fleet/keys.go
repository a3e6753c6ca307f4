package fleet

import "strings"

// keys builds every etcd key of the fleet under one prefix (the only
// place that does).
type keys struct{ prefix string }

// secret is <prefix>secret: the fleet secret, no lease.
func (k keys) secret() string { return k.prefix + "secret" }

// members is <prefix>members/, the prefix of the member keys.
func (k keys) members() string { return k.prefix + "members/" }

// member is <prefix>members/<node>, bound to the node's session lease.
func (k keys) member(node string) string { return k.members() + node }

// checks is <prefix>check/, the prefix of every check's keys.
func (k keys) checks() string { return k.prefix + "check/" }

// check is <prefix>check/<identity>/, the prefix a waiter watches.
func (k keys) check(identity string) string { return k.checks() + identity + "/" }

// run is <prefix>check/<identity>/run: the claim, bound to the lease.
func (k keys) run(identity string) string { return k.check(identity) + "run" }

// result is <prefix>check/<identity>/result: the record of the last run.
func (k keys) result(identity string) string { return k.check(identity) + "result" }

// ac is <prefix>ac/<hex>: the action-cache record (an ActionResult).
func (k keys) ac(hex string) string { return k.prefix + "ac/" + hex }

// cas is <prefix>cas/<hex>: a blob of at most InlineBlobMax bytes.
func (k keys) cas(hex string) string { return k.prefix + "cas/" + hex }

// retention is <prefix>retention/<period>: the evidence retention lease
// of a period, bound to that lease.
func (k keys) retention(period int64) string { return k.prefix + "retention/" + itoa(period) }

// identityOfRun answers the identity of a claim key, or "" if key is not
// one.
func (k keys) identityOfRun(key string) string {
	rest, ok := strings.CutPrefix(key, k.checks())
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(rest, "/run")
	if !ok || strings.Contains(id, "/") {
		return ""
	}
	return id
}

// reqRetention is <prefix>reqretention/<period>: the request retention
// lease of a period (reqs.go), bound to that lease.
func (k keys) reqRetention(period int64) string { return k.prefix + "reqretention/" + itoa(period) }

// tokens is <prefix>tokens/<repo_id>: the fencing tokens the fleet
// reserved for a repository's checkout (tokens.go), no lease.
func (k keys) tokens(repoID string) string { return k.prefix + "tokens/" + repoID }

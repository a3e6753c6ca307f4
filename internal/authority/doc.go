// Package authority holds the pure rules of who may grant what (DESIGN
// §13): which absolute paths can never be a root (a repository or a
// target) whoever asks, which directories of a home hold credentials, and
// whether a path lies inside an allowed area a person configured.
//
// Every decision is made on the canonical absolute path (symlinks
// resolved by the caller), never on a path relative to a root, so a root
// that *is* ~/.ssh is refused like a root that holds it.
//
// The rules are data and plain functions: the registry and the targets
// call them when a root is granted and at start-up (grants made before a
// rule existed are suspended until a person confirms them), the sandbox
// uses CredentialPaths to close credential files inside the tool and cache
// directories it shows a confined process.
package authority

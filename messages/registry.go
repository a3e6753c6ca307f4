package messages

import "time"

// Repository is one registered work tree.
type Repository struct {
	ID         string    `json:"repo_id"`
	CheckoutID string    `json:"checkout_id"`
	Root       string    `json:"root"`
	CommonDir  string    `json:"git_common_dir"`
	Registered time.Time `json:"registered_at"`
	// Identity is the root's (and its .git's) device and inode at
	// registration: an operation on a root that no longer matches
	// answers REPOSITORY_MOVED. Zero for records from before it was kept.
	Identity RootIdentity `json:"identity,omitzero"`
	// Grant says who granted agents this root (DESIGN §13); zero for
	// records from before grants were kept (suspended until a person
	// confirms them).
	Grant RootGrant `json:"grant,omitzero"`
}

// RootGrant records who granted agents a root (a repository or a target):
// By is "area:<dir>" (inside an allowed area a person configured),
// "person:<who>" (a person registered it: the CLI with the human token,
// the console, the embedding program) or "approval:<approval id>" (a
// person approved an agent's request for exactly this root).
type RootGrant struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// RootIdentity is the device and inode of a work tree's root and of its
// .git entry.
type RootIdentity struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	GitDev uint64 `json:"git_dev"`
	GitIno uint64 `json:"git_ino"`
}

// Register asks the registry to record a work tree. Root and CommonDir are
// canonical (realpath) and already checked to be a git work tree; the
// registry does no I/O but its own persistence.
type Register struct {
	Root      string
	CommonDir string
	Identity  RootIdentity
	// Grant is who granted the root on this call: a person's grant (or an
	// approval) replaces an area's, never the other way round.
	Grant RootGrant
	Now   time.Time
}

// Registered answers Register. Created is false when the work tree was
// already registered (registration is idempotent).
type Registered struct {
	Repo    Repository
	Created bool
	// Reidentified: the path was registered, but the directory there
	// was another one (moved or replaced); the record now names this one.
	Reidentified bool
}

// Unregister asks the registry to forget a repository.
type Unregister struct{ RepoID string }

// Unregistered answers Unregister.
type Unregistered struct{ Repo Repository }

// ListRepos asks for every registered repository.
type ListRepos struct{}

// Repos answers ListRepos, sorted by root.
type Repos struct{ Repos []Repository }

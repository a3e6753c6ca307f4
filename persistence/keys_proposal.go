package persistence

// PrefixProposal is the prefix of validated patch proposals.
const PrefixProposal = "proposal/"

// ProposalKey returns proposal/<proposal id>.
func ProposalKey(proposalID string) []byte { return []byte(PrefixProposal + proposalID) }

package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/harness"
)

// globalFlags are completed everywhere.
var globalFlags = []string{"--data-dir", "--json", "--timeout", "--help"}

// compSpec is what the completion scripts complete: commands, their
// subcommands and flags, and the operation names (those of this CLI's
// build, embedded in the script: completing needs no daemon).
type compSpec struct {
	commands []string
	subs     map[string][]string
	flags    map[string][]string
	ops      []string
	dirArg   map[string]bool // "cmd sub" whose operand is a directory
}

func completionSpec() compSpec {
	s := compSpec{
		commands: commandNames(),
		subs: map[string][]string{
			"repo":       {"add", "ls", "rm"},
			"completion": {"bash", "zsh", "fish"},
			"help":       nil,
		},
		flags:  map[string][]string{"status": {"--daemon", "--repo", "--register"}},
		dirArg: map[string]bool{"repo add": true},
	}
	for name, cmd := range commands {
		if len(cmd.subHelp) > 0 {
			s.subs[name] = sortedKeys(cmd.subHelp)
		}
		if len(cmd.flags) > 0 {
			s.flags[name] = append([]string(nil), cmd.flags...)
		}
	}
	s.subs["help"] = s.commands
	for _, o := range harness.Ops() {
		s.ops = append(s.ops, o.Name)
	}
	sort.Strings(s.ops)
	return s
}

func (c *cli) completion(shell string) error {
	s := completionSpec()
	var out string
	switch shell {
	case "bash":
		out = s.bash()
	case "zsh":
		out = s.zsh()
	case "fish":
		out = s.fish()
	default:
		return usageErr{fmt.Sprintf("completion for %q: want bash, zsh or fish", shell)}
	}
	_, err := fmt.Fprint(c.stdout, out)
	return err
}

func words(ws []string) string { return strings.Join(ws, " ") }

// caseArms writes one `name) var="..." ;;` arm per key of m (a shell
// case), or `name) var=(...) ;;` for a zsh array.
func caseArms(b *strings.Builder, m map[string][]string, varName string, array bool) {
	for _, k := range sortedKeys(m) {
		if array {
			fmt.Fprintf(b, "        %s) %s=(%s) ;;\n", k, varName, words(m[k]))
		} else {
			fmt.Fprintf(b, "        %s) %s=%q ;;\n", k, varName, words(m[k]))
		}
	}
}

func (s compSpec) bash() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# bash completion for harness (harness completion bash)
_harness() {
    local cur prev cmd="" sub="" i w subs="" flags=""
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    local commands=%q
    local globals=%q
    local ops=%q
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        case "$w" in
            --) break ;;
            --data-dir|--timeout) ((i++)); continue ;;
            -*) continue ;;
        esac
        if [[ -z "$cmd" ]]; then cmd="$w"; elif [[ -z "$sub" ]]; then sub="$w"; else break; fi
    done
    case "$prev" in
        --data-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --timeout) return ;;
    esac
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W "$commands $globals --version" -- "$cur"))
        return
    fi
    case "$cmd" in
`, words(s.commands), words(globalFlags), words(s.ops))
	caseArms(&b, s.subs, "subs", false)
	b.WriteString("    esac\n    case \"$cmd\" in\n")
	caseArms(&b, s.flags, "flags", false)
	b.WriteString(`    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$flags $globals" -- "$cur"))
        return
    fi
    if [[ ( "$cmd" == call || "$cmd" == ops ) && -z "$sub" ]]; then
        COMPREPLY=($(compgen -W "$ops" -- "$cur"))
        return
    fi
    if [[ -n "$subs" && -z "$sub" ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return
    fi
    case "$cmd $sub" in
`)
	for _, k := range sortedKeys(s.dirArg) {
		fmt.Fprintf(&b, "        %q) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", k)
	}
	b.WriteString(`    esac
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _harness harness
`)
	return b.String()
}

func (s compSpec) zsh() string {
	var b strings.Builder
	fmt.Fprintf(&b, `#compdef harness
# zsh completion for harness (harness completion zsh)
_harness() {
    local -a commands globals ops subs flags
    local cmd="" sub="" w i
    commands=(%s)
    globals=(%s)
    ops=(%s)
    for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        case $w in
            --) break ;;
            --data-dir|--timeout) ((i++)); continue ;;
            -*) continue ;;
        esac
        if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; else break; fi
    done
    case ${words[CURRENT-1]} in
        --data-dir) _files -/; return ;;
        --timeout) return ;;
    esac
    if [[ -z $cmd ]]; then
        compadd -- $commands $globals --version
        return
    fi
    case $cmd in
`, words(s.commands), words(globalFlags), words(s.ops))
	caseArms(&b, s.subs, "subs", true)
	b.WriteString("    esac\n    case $cmd in\n")
	caseArms(&b, s.flags, "flags", true)
	b.WriteString(`    esac
    if [[ ${words[CURRENT]} == -* ]]; then
        compadd -- $flags $globals
        return
    fi
    if [[ ( $cmd == call || $cmd == ops ) && -z $sub ]]; then
        compadd -- $ops
        return
    fi
    if (( ${#subs} )) && [[ -z $sub ]]; then
        compadd -- $subs
        return
    fi
    case "$cmd $sub" in
`)
	for _, k := range sortedKeys(s.dirArg) {
		fmt.Fprintf(&b, "        %q) _files -/; return ;;\n", k)
	}
	b.WriteString(`    esac
    _files
}
if [[ "${funcstack[1]}" == _harness ]]; then
    _harness "$@"
else
    compdef _harness harness
fi
`)
	return b.String()
}

func (s compSpec) fish() string {
	var b strings.Builder
	b.WriteString("# fish completion for harness (harness completion fish)\ncomplete -c harness -f\n")
	b.WriteString("complete -c harness -l data-dir -r -a '(__fish_complete_directories)' -d 'data directory of the daemon'\n")
	b.WriteString("complete -c harness -l json -d 'print JSON instead of tables'\n")
	b.WriteString("complete -c harness -l timeout -x -d 'give up after this duration'\n")
	b.WriteString("complete -c harness -s h -l help -d 'show help'\n")
	b.WriteString("complete -c harness -n __fish_use_subcommand -l version -d 'print the version'\n")
	fmt.Fprintf(&b, "complete -c harness -n __fish_use_subcommand -a '%s'\n", words(s.commands))
	for _, k := range sortedKeys(s.subs) {
		subs := s.subs[k]
		if len(subs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "complete -c harness -n '__fish_seen_subcommand_from %s; and not __fish_seen_subcommand_from %s' -a '%s'\n", k, words(subs), words(subs))
	}
	for _, k := range sortedKeys(s.flags) {
		for _, f := range s.flags[k] {
			fl := strings.TrimLeft(f, "-")
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(&b, "complete -c harness -n '__fish_seen_subcommand_from %s' -l %s\n", k, fl)
			} else {
				fmt.Fprintf(&b, "complete -c harness -n '__fish_seen_subcommand_from %s' -s %s\n", k, fl)
			}
		}
	}
	fmt.Fprintf(&b, "complete -c harness -n '__fish_seen_subcommand_from call ops; and not __fish_seen_subcommand_from %s' -a '%s'\n", words(s.ops), words(s.ops))
	b.WriteString("complete -c harness -n '__fish_seen_subcommand_from add' -a '(__fish_complete_directories)'\n")
	b.WriteString("complete -c harness -n '__fish_seen_subcommand_from restore backup' -F\n")
	return b.String()
}

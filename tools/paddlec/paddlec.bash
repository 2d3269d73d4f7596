# bash completion for paddlec (installed as
# share/bash-completion/completions/paddlec; docs/cli.md "Installing").
# Commands and options are read from the program's own help text
# (`paddlec --help`, `paddlec COMMAND --help`), so they never go stale.
_paddlec()
{
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion || return
    else
        cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
    fi
    local prog=${words[0]}
    local cmds
    cmds=$("$prog" --help 2>/dev/null | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
    if [ "$cword" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "$cmds help --help --version -V" -- "$cur")
        return
    fi
    local cmd=${words[1]} sub=
    if [ "$cmd" = help ]; then
        [ "$cword" -eq 2 ] && mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
        return
    fi
    if [ "$cmd" = tokenizer ]; then
        if [ "$cword" -eq 2 ]; then
            mapfile -t COMPREPLY < <(compgen -W "train --help" -- "$cur")
            return
        fi
        sub=${words[2]}
    fi
    case $cur in
        -*)
            local opts
            opts=$("$prog" "$cmd" $sub --help 2>/dev/null | grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u)
            mapfile -t COMPREPLY < <(compgen -W "$opts --help" -- "$cur")
            ;;
        *)
            # option values and positional arguments: file names
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            ;;
    esac
}
complete -o filenames -F _paddlec paddlec

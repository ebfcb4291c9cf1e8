# bash completion for bgtaskctl(1)                          -*- shell-script -*-
# Verbs, their options, and app IDs from the running daemon (bgtaskctl list --no-legend).

__bgtaskctl_apps() {
    local socket=()
    [[ -n ${__bgtaskctl_socket-} ]] && socket=(--socket "$__bgtaskctl_socket")
    bgtaskctl "${socket[@]}" list --no-legend 2>/dev/null | while read -r id _; do printf '%s\n' "$id"; done
}

_bgtaskctl() {
    local cur prev words cword
    _init_completion || return

    local verbs="list status launch foreground background interrupt end-interruption terminate
        assertions explain monitor log stats reload refresh low-power conditions notify wake
        run-task hold snapshot record replay energy cancel"
    local global="--socket --json --no-legend --no-pager --help --version"

    local i verb="" __bgtaskctl_socket=""
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket) __bgtaskctl_socket=${words[i + 1]}; ((i++)) ;;
            --socket=*) __bgtaskctl_socket=${words[i]#--socket=} ;;
            --) break ;;
            -*) ;;
            *) [[ -z $verb ]] && verb=${words[i]} ;;
        esac
    done

    case $prev in
        --socket) _filedir; return ;;
        --directory) _filedir -d; return ;;
        --app) COMPREPLY=($(compgen -W "$(__bgtaskctl_apps)" -- "$cur")); return ;;
        --global) COMPREPLY=($(compgen -W "on unmetered off" -- "$cur")); return ;;
        --power) COMPREPLY=($(compgen -W "external battery" -- "$cur")); return ;;
        --network) COMPREPLY=($(compgen -W "none metered unmetered" -- "$cur")); return ;;
        --lines | -l | -n | --name | --payload | --scene | --title) return ;;
        --output | -o) [[ $verb == snapshot ]] && _filedir; return ;;
    esac

    if [[ -z $verb ]]; then
        COMPREPLY=($(compgen -W "$verbs $global" -- "$cur"))
        return
    fi

    local opts="--socket --help"
    case $verb in
        list) opts+=" --json --no-legend --running" ;;
        status) opts+=" --json --lines --no-pager" ;;
        launch) opts+=" --background" ;;
        foreground) opts+=" --keep-others --scene --inactive --title --output" ;;
        background) opts+=" --scene --closed --title --output" ;;
        snapshot) opts+=" --scene --output -o" ;;
        assertions) opts+=" --json --no-legend" ;;
        explain | stats) opts+=" --json" ;;
        monitor) opts+=" --json" ;;
        refresh) opts+=" --global --json --no-legend" ;;
        conditions) opts+=" --json --power --network" ;;
        notify | wake) opts+=" --payload" ;;
        hold) opts+=" --app --name" ;;
        record) opts+=" -o --output" ;;
        replay) opts+=" -q --quiet" ;;
        log) opts+=" --no-pager" ;;
        energy) opts+=" --json --no-legend --directory" ;;
        cancel) opts+=" --json" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi

    # Positional arguments: how many came after the verb.
    local n=0 seen=0
    for ((i = 1; i < cword; i++)); do
        [[ ${words[i]} == "$verb" && $seen == 0 ]] && { seen=1; continue; }
        ((seen)) || continue
        case ${words[i]} in
            --socket | --app | --name | --payload | --global | --power | --network | --lines | -l | -n | --scene | --title | --output | -o) ((i++)) ;;
            -*) ;;
            *) ((n++)) ;;
        esac
    done

    case $verb in
        status | launch | foreground | background | interrupt | end-interruption | terminate | explain | wake | log | snapshot)
            ((n == 0)) && COMPREPLY=($(compgen -W "$(__bgtaskctl_apps)" -- "$cur")) ;;
        run-task | cancel)
            ((n == 0)) && COMPREPLY=($(compgen -W "$(__bgtaskctl_apps)" -- "$cur")) ;;
        refresh)
            if ((n == 0)); then COMPREPLY=($(compgen -W "$(__bgtaskctl_apps)" -- "$cur"));
            elif ((n == 1)); then COMPREPLY=($(compgen -W "on off" -- "$cur")); fi ;;
        low-power)
            ((n == 0)) && COMPREPLY=($(compgen -W "on off" -- "$cur")) ;;
        notify)
            ((n == 1)) && COMPREPLY=($(compgen -W "$(__bgtaskctl_apps)" -- "$cur")) ;;
        hold)
            _command_offset $cword ;;
        record)
            [[ $prev == -o || $prev == --output ]] && _filedir ;;
        replay)
            ((n == 0)) && _filedir ;;
    esac
} && complete -F _bgtaskctl bgtaskctl

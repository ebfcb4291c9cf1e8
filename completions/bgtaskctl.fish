# fish completion for bgtaskctl(1): verbs, options, app IDs from the running daemon.

function __bgtaskctl_apps
    set -l socket
    set -l tokens (commandline -opc)
    set -l i (contains -i -- --socket $tokens)
    and set socket --socket $tokens[(math $i + 1)]
    bgtaskctl $socket list --no-legend 2>/dev/null | string replace -r '\s.*' ''
end

set -l verbs list status launch foreground background interrupt end-interruption terminate assertions explain monitor log stats reload refresh low-power conditions notify wake run-task hold snapshot record replay energy cancel
set -l app_verbs status launch foreground background interrupt end-interruption terminate explain wake run-task refresh log snapshot cancel

complete -c bgtaskctl -f
complete -c bgtaskctl -l socket -r -F -d "the daemon's socket"
complete -c bgtaskctl -l json -d 'print JSON'
complete -c bgtaskctl -l no-legend -d 'no headers or footer'
complete -c bgtaskctl -l no-pager -d 'do not pipe into a pager'
complete -c bgtaskctl -s h -l help -d 'show help'
complete -c bgtaskctl -l version -d 'show the version'

complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a list -d 'list the apps and their states'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a status -d "show an app's state and recent decisions"
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a launch -d 'launch an app'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a foreground -d 'bring an app to the foreground'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a background -d 'send an app to the background'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a interrupt -d 'interrupt an active app'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a end-interruption -d 'end an interruption'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a terminate -d 'terminate an app'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a assertions -d 'list live assertions'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a explain -d 'explain why an app is in its state'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a monitor -d 'print every decision as it happens'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a log -d 'show the journal'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a stats -d "show the daemon's counters"
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a reload -d 're-read configuration and manifests'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a refresh -d 'set Background App Refresh'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a low-power -d 'turn Low Power Mode on or off'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a conditions -d 'set or show conditions'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a notify -d 'post a notification'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a wake -d 'wake an app for a remote notification'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a run-task -d 'run a pending task request now'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a hold -d 'run a command while holding an app'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a cancel -d 'cancel a continued task, or list them'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a energy -d 'list apps by background CPU and wakes'
complete -c bgtaskctl -n "__fish_seen_subcommand_from energy" -l directory -x -a '(__fish_complete_directories)' -d 'collected journal files'

complete -c bgtaskctl -n "__fish_seen_subcommand_from $app_verbs" -a '(__bgtaskctl_apps)' -d app
complete -c bgtaskctl -n "__fish_seen_subcommand_from notify" -a '(__bgtaskctl_apps)' -d app
complete -c bgtaskctl -n "__fish_seen_subcommand_from list" -l running -d 'running apps only'
complete -c bgtaskctl -n "__fish_seen_subcommand_from status" -s l -s n -l lines -r -d 'journal entries shown'
complete -c bgtaskctl -n "__fish_seen_subcommand_from launch" -l background -d 'into the background'
complete -c bgtaskctl -n "__fish_seen_subcommand_from foreground" -l keep-others -d 'leave other apps active'
complete -c bgtaskctl -n "__fish_seen_subcommand_from refresh" -l global -x -a 'on unmetered off'
complete -c bgtaskctl -n "__fish_seen_subcommand_from refresh low-power" -a 'on off'
complete -c bgtaskctl -n "__fish_seen_subcommand_from conditions" -l power -x -a 'external battery'
complete -c bgtaskctl -n "__fish_seen_subcommand_from conditions" -l network -x -a 'none metered unmetered'
complete -c bgtaskctl -n "__fish_seen_subcommand_from notify wake" -l payload -x -d 'JSON object'
complete -c bgtaskctl -n "__fish_seen_subcommand_from hold" -l app -x -a '(__bgtaskctl_apps)'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a snapshot -d 'copy out an app\'s scene snapshot'
complete -c bgtaskctl -n "__fish_seen_subcommand_from foreground background snapshot" -l scene -x -d 'one scene (window) of the app'
complete -c bgtaskctl -n "__fish_seen_subcommand_from foreground background" -l title -x -d 'the scene\'s title'
complete -c bgtaskctl -n "__fish_seen_subcommand_from foreground background" -l output -x -d 'the scene\'s display'
complete -c bgtaskctl -n "__fish_seen_subcommand_from foreground" -l inactive -d 'the scene visible, not active'
complete -c bgtaskctl -n "__fish_seen_subcommand_from background" -l closed -d 'the scene is gone'
complete -c bgtaskctl -n "__fish_seen_subcommand_from snapshot" -s o -l output -r -d 'where to write the PNG'
complete -c bgtaskctl -n "__fish_seen_subcommand_from hold" -l name -x
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a record -d 'save the inputs the core took to a file'
complete -c bgtaskctl -n "not __fish_seen_subcommand_from $verbs" -a replay -d 'run a recording through the core offline'
complete -c bgtaskctl -n "__fish_seen_subcommand_from record" -s o -l output -r -F
complete -c bgtaskctl -n "__fish_seen_subcommand_from replay" -s q -l quiet

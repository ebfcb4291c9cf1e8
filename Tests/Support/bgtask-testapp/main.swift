// bgtask-testapp: an app built on BGTaskClient for the integration tests. It reports everything it
// receives and does as one JSON object per line (flushed at once), and does exactly what its options
// and commands say, nothing else.
//
// USAGE: bgtask-testapp [OPTIONS]
// Options are read from $BGTASK_TESTAPP_OPTIONS (split on whitespace) and then from argv.
//
//   --app-id ID                     the app to check in as (default $BGTASKD_APP_ID)
//   --socket PATH                   the daemon's socket (default $BGTASKD_SOCKET, else /run/bgtaskd/io.bgtaskd)
//   --output PATH                   append the lines to PATH instead of stdout (for daemon-launched apps)
//   --commands PATH                 read commands from PATH (e.g. a FIFO, reopened at each EOF) instead of stdin
//   --exit-on-eof                   exit (status 0) when stdin ends (default: keep running)
//
//   Acknowledgements (did-enter-background; remote-notification wakes):
//   (default)                       acknowledged by the library when the delegate method returns
//   --no-ack                        never acknowledge did-enter-background: the daemon terminates the app
//                                   after DidEnterBackgroundTimeoutSec (an `ack ID` command still can)
//   --ack-delay-ms N                acknowledge did-enter-background N ms after it arrives
//   --manual-ack                    hold every acknowledgement until an `ack ID` command
//
//   Background tasks:
//   --begin-task-on-background NAME begin a background task NAME in applicationDidEnterBackground
//                                   (before the acknowledgement)
//   --end-task-after-ms N           end that task N ms after it was begun (default: keep it until expiration)
//   --ignore-expiration             expiration handlers report but do not end their task (the daemon
//                                   terminates the app at the budget's end: expiration-not-handled)
//   --hold-task                     never end a task by itself: no timer, not on expiration (only `end ID`)
//
//   Scheduled tasks:
//   --register-task ID[,ID...]      register a launch handler for these identifiers (repeatable)
//   --task-duration-ms N            the launch handler completes the task after N ms (default 0)
//   --task-fail                     complete tasks with success=false
//   --no-complete-task              never complete a task by itself (only `complete ID`)
//   --ignore-task-expiration        the task's expiration handler does not complete it
//
//   Termination:
//   --stay-on-terminate             keep running after will-terminate (default: exit 0 when it returns)
//   --ignore-sigterm                report SIGTERM and keep running (default: report it, then die of it)
//
// Commands, one per line; each is answered by one line {"command":"NAME",...} ("error" on failure):
//   begin NAME            begin a background task       -> "taskId" (0: denied)
//   end ID                end a background task
//   remaining             background time remaining     -> "remainingSec" (null: unlimited, foreground)
//   state                 -> "applicationState", "lifecycleState", "refreshStatus", "checkedIn"
//   ack ID                send a held acknowledgement
//   submit refresh|processing ID [DELAY_SEC] [network] [power]
//   cancel ID | cancel-all | pending (-> "requests")
//   complete ID [true|false]   complete a running scheduled task
//   activity MODE | end-activity ID
//   exit [STATUS]
//
// Lines it writes (every line also has "monotonicUSec", CLOCK_MONOTONIC, comparable with deadlineUSec):
//   {"status":"started","appId":...,"socket":...,"pid":...}
//   {"status":"checked-in","applicationState":...,"lifecycleState":...,"refreshStatus":...}
//   {"status":"connection-failed","error":"NoSuchApp","message":...}
//   {"event":"did-enter-background","id":3,"state":"background","needsAck":true,...,"applicationState":...}
//      (every Event field the daemon sent, with "kind" renamed "event"; printed before the app reacts)
//   {"action":"begin"|"end"|"expiration"|"ack"|"ack-held"|"perform-task"|"task-expiration"|"complete",...}
//   {"signal":"SIGTERM"}

TestApp.main()

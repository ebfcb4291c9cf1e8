# A lifecycle-aware app: it links BGTaskClient, checks in, and handles the
# lifecycle events. It may be woken to refresh its mailbox (BackgroundModes=fetch)
# with the one task identifier it declares.
[App]
ID=org.example.Mail
Name=Mail
# Placeholder program so the example runs anywhere; a real mail client built on
# BGTaskClient goes here. A placeholder never checks in, so a launch of it ends
# in launch-timeout after LaunchTimeoutSec= -- handy to watch that decision.
Exec=/bin/sleep infinity
BackgroundModes=fetch
PermittedTaskIdentifiers=org.example.Mail.refresh
LifecycleAware=yes
#User=
#Environment=
#BackgroundAppRefresh=on
#RefreshRestricted=no

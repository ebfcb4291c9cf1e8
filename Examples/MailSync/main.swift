// mail-sync: a mail app on BGTaskClient. When it leaves the foreground it asks for background time,
// finishes its sync, and ends the task; it also asks to be woken now and then to refresh the mailbox.
//
//   BGTASKD_APP_ID=org.example.Mail BGTASKD_SOCKET=/run/bgtaskd/io.bgtaskd mail-sync
//   bgtaskctl background org.example.Mail     # watch it sync, then get suspended
//
// The code is in MailApp.swift: in Swift 6, closures written in main.swift belong to the main actor.

MailApp.main()

// A notes app with two windows (scenes, SPEC §15): each window is a note; when the app is about to be frozen,
// each scene writes a PNG of its note for the App Switcher (hiding a note marked private).
import BGTaskClient

let app = BGApplication(appID: BGApplication.environmentAppID ?? "org.example.Notes")
let notes = NotesDelegate()
app.delegate = notes
app.sceneDelegate = notes   // checks in with scenes: true
app.run()

// Package a2ui holds what Baton knows of A2UI v0.9.1, Google's declarative
// agent-to-UI protocol: its messages, the basic component catalog,
// validation, the folded state of a conversation's surfaces, the check of
// a user's action against what a surface offered, a plain-text rendering,
// and what one invocation's calls show until their events are stored
// ([Calls]). It is a part of its own because every client path needs it
// (the AI SDK stream, A2A, a reloaded page) while it needs none of them:
// it imports neither Firestore nor toolcallback and stores nothing; its
// callers store a surface as the messages [Surface.Redraw] returns.
//
// # Messages
//
// [Message] is one agent-to-client message: createSurface,
// updateComponents, updateDataModel or deleteSurface, each with "version".
// [ClientMessage] and [Action] are the client's answer to a press on a
// button whose action is an event. Their JSON is the protocol's, field for
// field. Baton writes "v0.9" (v0.9.1 keeps it on the wire) and reads
// "v0.9.1" as well; it draws with the basic catalog ([BasicCatalogID]).
//
// # Validation
//
// [Catalog.Decode] (JSON from a model) and [Catalog.Validate] (messages
// built in Go) check a list of messages in two passes. First against JSON
// Schemas Baton embeds (schema/, draft 2020-12, written from the v0.9.1
// specification): each message's envelope, then each component against
// the schema of its type, so that an error names the component. Then in Go
// what a schema cannot say: a surface is created before it is used and not
// twice (given the surfaces already shown), its catalog is the basic one,
// every id a component names exists, the tree has a root and no cycle,
// binding paths are JSON Pointers, function calls have their arguments,
// and a button's event has a name. Problems come back as a
// [*ValidationError] wrapping [ErrInvalid], each as
// "<where>: <what>", short enough for a model to correct its call.
//
// The basic catalog is the 18 components of @a2ui/web_core 0.11.0, the
// renderer Baton's page uses: Text, Image, Icon, Video, AudioPlayer, Row,
// Column, List, Card, Tabs, Modal, Divider, Button, TextField, CheckBox,
// ChoicePicker, Slider, DateTimeInput; and the 25 functions it implements.
// (ProgressBar, newer in the specification's repository, is left out:
// that renderer cannot draw it.)
//
// # Surfaces
//
// [Surfaces] folds messages ([Surfaces.Apply]) into each surface's latest
// components and data model, as a renderer does; a deleted surface is
// gone. [Surface.Redraw] returns the three messages that draw a surface as
// it last was (createSurface, updateComponents, updateDataModel): what a
// reloaded page, a second tab or A2A tasks/get shows, and what is stored.
// [Surfaces.CheckAction] checks a user's action against the surface it
// names: [ErrNoSurface] when the surface is not shown, [ErrNotOffered]
// when the component, its event or a context field was not offered.
// [CheckAnswer] and [CheckCardAction] also run the surface's checks that
// the action's values decide (required, and, or, not over the paths its
// event sends): [ErrCheckFailed] for a required field left empty. The
// renderer runs every check and disables the button meanwhile; the server
// runs the ones it can decide without the renderer's state, so a client
// that runs none cannot send what the form refuses.
// [Surface.Text] renders a surface for clients without A2UI.
//
// # A conversation's surfaces
//
// A conversation's events note what each call showed ([Note], [ShownIn]).
// [DrawnIn] reads them back as each surface last was, in the order they
// were first shown, with the call that waits on a form; [Fold] is the same
// state as [Surfaces]. A form answered by an action shows the values the
// action carried ([Surfaces.Submit]). A waiting call's answer is checked
// with [CheckAnswer] against what the call showed; an action on a card,
// sent as a new message, with [CheckCardAction] against the surfaces as
// they last were ([ErrSurfaceWaits] for a form's), and reaches the model as
// the text [ActionText] writes.
package a2ui

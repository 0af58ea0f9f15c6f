// Package chat is the wing of the chat turn: conversations, their
// messages, handoffs and the turn that has a user's message routed,
// answered and committed (conversations). It imports the wings below it
// (platform to routing); the work a turn starts (tasks, sessions, plans,
// reports) is reached through ports the wire layer fills, never imported.
package chat

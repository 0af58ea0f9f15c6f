// Package a2a is the wing of Google's Agent2Agent protocol: the team as an
// A2A agent (server) and external A2A agents as team members (remote:
// "remote" means an external A2A agent and nothing else). It is the top
// domain wing: it may import every other wing, and only the layers
// (store, api, testkit, wire) import it.
package a2a

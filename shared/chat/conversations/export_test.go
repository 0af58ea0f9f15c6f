package conversations

// ToolAnswerReserve is toolAnswerReserve, for the tests of the time a
// chat tool may wait.
const ToolAnswerReserve = toolAnswerReserve

package routing

// Background are messages that carry no topic of their own: follow-ups,
// acknowledgements and requests about "that", which mean whatever the
// conversation was about. A team's classifier learns them as one more
// class whose probability belongs to no agent (classifier.go): without it,
// a softmax over the team's skills hands every message to some skill, and
// "and how long would that take?" went to whichever skill's examples
// mention time, with a confidence that took the conversation away from
// the specialist it was with. With it, such a message leaves every agent
// unsure: continuity keeps the current agent, and a first message goes to
// the default. The same for every team (part of the product, not of any
// team's data or of the benchmarks' splits).
var Background = []string{
	"ok",
	"okay, got it",
	"sure",
	"yes please",
	"no, not that",
	"go on",
	"and then?",
	"what else?",
	"anything else I should know?",
	"can you say more about that?",
	"could you expand on the last point?",
	"I don't understand, can you rephrase?",
	"give me an example",
	"give me another option",
	"try again",
	"that's not what I meant",
	"perfect, thank you",
	"great job",
	"cool, thanks a lot",
	"much appreciated",
	"why is that?",
	"how so?",
	"are you sure?",
	"what do you recommend?",
	"which one is better?",
	"what are the next steps?",
	"what should I do now?",
	"how long would that take?",
	"how much would it be?",
	"is that a lot?",
	"compare the two for me",
	"let's go with the first one",
	"the second option sounds better",
	"what about the other one?",
	"same thing but for next month",
	"do the same for the rest",
	"now do it again with the new numbers",
	"can you double check that?",
	"what did you mean by that?",
	"hmm, I'm not convinced",
	"fine, let's continue",
	"one more question",
	"wait, back up a bit",
	"sounds good to me",
	"what are the risks with that?",
	"what would you change?",
	"is there a simpler way?",
	"can we do it faster?",
	"remind me what we decided",
	"turn that into a checklist",
	"list the steps for me",
}

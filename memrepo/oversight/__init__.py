"""What a person supervising the memory looks at: the inbox, a proposal's card and diff, a
memory with its history, pages of memories. Each view composes the services below it (review,
lifecycle, agents, team) into one value an interface lays out (``memrepo ui``, a forge's pull
request description); nothing here decides anything the services do not.
"""

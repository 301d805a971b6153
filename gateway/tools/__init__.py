"""Tool calls for chat models whose templates know nothing of tools (SmolLM2's ChatML among them).

spec.py     the functions a request offers and how it lets the model use them (tool_choice)
prompt.py   the conversation as plain chat messages: the tools in the system turn, past calls and their
            results as text the model was taught to read
grammar.py  a grammar that forces a call (tool_choice "required" or a named function) and its arguments'
            JSON schema at decode time
parser.py   the model's text back into calls, whole or as it streams

The wire format is SmolLM2's: <tool_call>[{"name": ..., "arguments": {...}}]</tool_call>.
"""

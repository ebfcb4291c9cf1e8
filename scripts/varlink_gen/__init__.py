"""scripts/gen-varlink.py's parts: the IDL and its Swift map (idl), a field's Swift (field), the Swift of
structs, methods and errors (code)."""

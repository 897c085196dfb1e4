"""How our users say "my password is …", language by language: a table the prose scans read.

Two families. In languages written with spaces between words (English, German, French, Spanish,
Portuguese, Italian, Dutch) a statement is a label, a few words, a verb or a colon, the value:
"das Kennwort für den Server lautet …", "le mot de passe du serveur est …". In Japanese,
Chinese, Korean and Russian the label is followed by a particle or a dash ("パスワードは…",
"密码是…", "비밀번호는 …", "пароль — …") and the value is the run of Latin characters that
follows, since a password is typed on a Latin keyboard and the sentence around it is not.

The words that describe a password rather than give one ("falsch", "obligatoire", "expired")
are listed per language; ``prose_values.py`` also refuses values shaped like adjectives and
participles, so the lists only need the short, common words that shape does not catch.

Standard library only: the capture proxy imports this module through ``policy/redact/``.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Labels besides the English ones (password, passwd, passcode, pwd, pw), lower case.
PASSWORD_LABELS: frozenset[str] = frozenset(
    (
        "passwort", "kennwort",  # German
        "mot de passe", "mdp",  # French
        "contraseña", "contrasena", "clave de acceso",  # Spanish
        "senha", "palavra-passe",  # Portuguese
        "parola d'ordine",  # Italian (and "password", as in English)
        "wachtwoord",  # Dutch
    )
)  # fmt: skip

#: Labels that end compound nouns: "WLAN-Passwort", "Rootkennwort", "databasewachtwoord".
COMPOUND_LABELS: frozenset[str] = frozenset(("passwort", "kennwort", "wachtwoord"))

#: The verbs that join a label to its value, in every language above, lower case.
VERBS: frozenset[str] = _words(
    """
    is was
    ist war lautet heißt heisst
    est était etait
    es era
    é
    è
    luidt
    """
)

#: Words that may open the few words between a label and its verb: "für den Server", "du serveur".
BRIDGE_OPENERS: frozenset[str] = _words(
    """
    für von vom zum zur bei auf im des der den dem
    du de des pour sur au aux chez
    del para en por
    do da dos das no na em
    della dello di per su al
    van voor op bij het
    """
)

#: Words that, after a value, start another part of the sentence: "… is kiyqvbjmthpb for staging".
CLAUSE_OPENERS: frozenset[str] = _words(
    """
    for on at to and but so until since from now please btw thanks
    und für aber bis
    et pour mais
    y para pero
    e mas
    per ma
    en voor maar
    """
)

#: Words that describe a password, in each language; lower case, ASCII spellings only, since a
#: value with letters outside ASCII is never taken for a password made of letters alone.
DESCRIPTIONS: frozenset[str] = _words(
    """
    correct incorrect wrong right fine good bad weak strong secure insecure unsafe safe valid
    invalid expired empty blank missing unknown known unset mandatory optional required hidden
    visible plaintext cleartext plain clear hashed salted encrypted unencrypted bcrypt scrypt
    argon argonid pbkdf bcrypted hash hashes secret private public unique random same different
    new old default temporary permanent simple easy hard complex long short sensitive case
    here there below above attached inside elsewhere gone lost mine yours ours theirs his hers
    reset changed change update rotated rotate managed stored saved sent shared local global
    falsch richtig korrekt schwach sicher unsicher leer abgelaufen erforderlich pflicht gesperrt
    geheim neu alt zu kurz lang gleich anders bekannt unbekannt gespeichert verschluesselt
    faux fausse faible fort forte vide expire requis obligatoire invalide incorrecte trop court
    courte long longue secret nouveau ancien oublie
    incorrecta incorrecto invalida invalido obligatoria obligatorio debil fuerte vacia vacio
    caducada caducado demasiado corta corto larga largo nueva nuevo segura seguro
    invalida incorreta incorreto obrigatoria obrigatorio fraca forte vazia vazio expirada
    expirado muito curta curto longa longo nova novo segura seguro
    errata errato sbagliata sbagliato obbligatoria obbligatorio debole vuota vuoto scaduta
    scaduto troppo corta corto lunga lungo nuova nuovo sicura sicuro
    onjuist ongeldig verplicht zwak sterk leeg verlopen fout juist te kort lang nieuw oud veilig
    """
)

#: Two consonants in a row that words of these languages use ("st", "ch", "ng", "pf", "sch" …).
#: Random letters are mostly other pairs ("kiyqvbjmthpb": yq, qv, vb, bj, jm), so a value with
#: two pairs off this list is taken for random whatever else it looks like.
CONSONANT_PAIRS: frozenset[str] = _words(
    """
    bb bl br cc ch ck cl cr ct dd dg dr ds dt ff fl fr gg gh gl gn gr gs gt hl hm hn hr ht
    kk kl kn kr ks kt lb lc ld lf lg lh lk ll lm ln lp ls lt lv lz mb mm mn mp ms nc nd nf
    ng nh nk nn nr ns nt nv nz pf ph pl pp pr ps pt rb rc rd rf rg rh rk rl rm rn rp rr rs
    rt rv rz sc sh sk sl sm sn sp ss st sw th tl tr ts tt tw tz wh wr
    """
)

#: Labels in scripts other than Latin. Russian inflects the noun; "암호화" (encryption) and
#: "密码学" (cryptography) start with a label but are other words: prose_scripts.py leaves them out.
SCRIPT_LABELS: tuple[str, ...] = (
    "パスワード", "暗証番号", "パスコード",  # Japanese
    "密码", "密碼", "口令",  # Chinese, simplified and traditional
    "비밀번호", "패스워드", "암호",  # Korean
    "пароль", "пароля", "паролем", "паролю",  # Russian
)  # fmt: skip

#: What may end the words between such a label and its value: "は", "是", "는", "—", "это".
SCRIPT_CONNECTORS: tuple[str, ...] = (
    "は", "が", "：",  # Japanese (and the full-width colon of Japanese and Chinese)
    "是", "为", "為",  # Chinese
    "는", "은", "이", "가",  # Korean
    "—", "–", "это", "был", "была", "будет",  # Russian
)  # fmt: skip

#: Object markers: "パスワードを…", "비밀번호를 …" make the password the object of a verb
#: ("forgot", "reset"), so a later particle starts another clause.
SCRIPT_OBJECT_MARKERS: frozenset[str] = frozenset(("を", "를", "을"))

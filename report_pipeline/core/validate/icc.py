"""An ICC profile embedded in a codestream (a JPEG's APP2 segments, as Pillow joins them into
`image.info["icc_profile"]`): read within a cap, weighed, and never copied into the archive.

The page's colour is the PDF's. An image dictionary's /ColorSpace (required beside DCTDecode)
says what the samples mean, and MuPDF's renderer ignores a JPEG's own profile under it, with
colour management on or off: an Adobe RGB profile in the APP2 of a JPEG declared /DeviceRGB
leaves MuPDF's pixels equal to the samples, where converting through the profile would move them
by a mean of 11 levels (of 255) from what the page shows. The PDF's own ICC profiles
(/ICCBased) are MuPDF's to apply, through its LittleCMS, and it applies them. So the samples are
archived as the page draws them, already in sRGB, and the record says what became of the
embedded profile: dropped (over the cap, or not a profile LittleCMS can read) or not applied.
"""

from __future__ import annotations

import io

from PIL import Image, ImageCms

# Real display and camera profiles are a few KiB; large press (CMYK) profiles stay under 1 MiB,
# and 1 MiB is also the most Pillow's PNG reader inflates from an iCCP chunk (MAX_TEXT_CHUNK).
# Past it a profile is dropped unparsed, so LittleCMS only ever reads a bounded one: a header
# may claim 0xFFFFFFF0 bytes whatever the segments hold, and the claim counts too.
MAX_PROFILE_BYTES = 1 << 20


def profile_note(image: Image.Image) -> str:
    """What became of the profile embedded in the decoded `image` ("" when it has none)."""
    data = image.info.get("icc_profile")
    if not data:
        return ""
    claimed = int.from_bytes(data[:4], "big") if len(data) >= 4 else 0
    if max(len(data), claimed) > MAX_PROFILE_BYTES:
        return (
            f"embedded ICC profile dropped: {len(data):,} bytes whose header claims "
            f"{claimed:,}, over the {MAX_PROFILE_BYTES:,}-byte cap"
        )
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(data))
        space = profile.profile.xcolor_space.strip()  # a header signature: "RGB", "GRAY"...
    except (OSError, ValueError, TypeError, ImageCms.PyCMSError):
        return f"embedded ICC profile dropped: {len(data):,} bytes LittleCMS cannot read"
    space = space if space.isalnum() and space.isascii() else "unknown colour space"
    return (
        f"embedded ICC profile ({len(data):,} bytes, {space}) not applied: the PDF's "
        "/ColorSpace rules the samples, as the page draws them"
    )

"""The summary printed when a folder of images is read: classes, images per split, the size and channels chosen and
why, what was converted and skipped."""

from keras_capsules.datasets.folder_scan import NAMED, SKIP_WORDS


def summary_lines(record):
    """The printed summary of a folder's ``record``: what was read, chosen, converted and skipped."""
    classes = record["class_names"]
    lines = [f"Image folder {record['path']} ({record['layout']}): {len(classes)} classes {classes}"]
    lines.append("  images: " + ", ".join(f"{split} {count}" for split, count in record["images"].items()))
    height, width = record["image_size"]
    lines.append(
        f"  size {height}x{width}: {record['image_size_from']}; {record['resized']} image(s) resized to it ({record['resize_method']})"
    )
    lines.append(
        f"  channels {record['channels']} ({'gray' if record['channels'] == 1 else 'RGB'}): {record['channels_from']}"
    )
    converted = [
        f"{record[key]} {words}"
        for key, words in (
            ("gray_to_rgb", "gray images repeated to RGB"),
            ("rgb_to_gray", "colour images turned to gray (luma)"),
            ("alpha_dropped", "alpha channels dropped"),
            ("sixteen_bit", "16-bit images scaled to 8 bits (high byte)"),
        )
        if record[key]
    ]
    if converted:
        lines.append("  converted: " + "; ".join(converted))
    if record["nested_folders"]:
        lines.append(f"  {record['nested_folders']} sub-folders inside class folders were read with their class")
    for kind, words in SKIP_WORDS.items():
        count = record["skipped"].get(kind)
        if count:
            named = ", ".join(record["skipped_named"][kind]) + (", ..." if count > NAMED else "")
            if kind == "not_image":
                named = ", ".join(f"{extension} {n}" for extension, n in sorted(record["skipped_extensions"].items()))
            lines.append(f"  {'warning: ' if kind in WARNED else ''}skipped {count} {words}: {named}")
    if record["empty_classes"]:
        lines.append(
            f"  warning: skipped the class folders without a readable training image {record['empty_classes']} "
            f"(and their {record['images_of_empty_classes']} other images)"
        )
    return lines


#: Skips that the summary flags as warnings (the others are expected in ordinary folders).
WARNED = (
    "undecodable",
    "outside_class_folders",
    "broken_link",
    "symlink_cycle",
    "linked_duplicate",
    "linked_across_classes",
    "linked_train_and_test",
)

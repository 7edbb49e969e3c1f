"""The built-in factor rubrics: edit quality, instruction fidelity and image preservation.

Factor keys, the 1-7 integer scale, the 15-30 word justification and the
``offline_factor_results`` / ``online_factor_results`` answer keys follow the benchmark these
rubrics come from; the wording of the definitions is cigeval's. Each rubric is a
:class:`~cigeval.rubrics.custom.FactorRubric`, the same class users build their own with.
"""

from __future__ import annotations

from cigeval.rubrics.factor_rubric import Factor, FactorRubric

EDIT_QUALITY_FACTORS: tuple[Factor, ...] = (
    Factor(
        "scale_realism",
        "Whether objects that were added or changed have a believable size, both against the "
        "objects around them and for their distance from the camera.",
        checks=(
            "which objects the edit added, resized or altered",
            "their size next to neighbouring objects of known size",
            "whether size shrinks with distance as the scene's perspective demands",
        ),
        high=(
            "edited objects have sizes a viewer accepts without a second look",
            "size relations with neighbouring objects hold up",
        ),
        low=(
            "an edited object is plainly too large or too small",
            "an object's size contradicts how far away it appears",
        ),
    ),
    Factor(
        "spatial_relationship",
        "Whether edited objects sit in sensible positions and orientations, rest on what "
        "supports them, occlude and are occluded correctly, and fit the scene's geometry.",
        checks=(
            "placement and orientation of edited objects",
            "contact with supporting surfaces (no floating or sinking)",
            "front-to-back order and occlusion",
        ),
        high=(
            "positions, orientations and depth order are logical",
            "edited objects obey physical support and the scene's layout",
        ),
        low=(
            "objects float, intersect or face impossible directions",
            "depth order or occlusion contradicts the rest of the scene",
        ),
    ),
    Factor(
        "texture_and_detail",
        "Whether the edited region carries textures and a level of detail that suit its "
        "material and agree with the surrounding image.",
        checks=(
            "surface texture inside the edited region",
            "sharpness of detail compared with nearby untouched areas",
            "whether materials (fur, fabric, metal, skin) look like themselves",
        ),
        high=(
            "textures are natural and continue the surrounding patterns",
            "detail level is even across edited and untouched areas",
        ),
        low=(
            "smeared, plastic-looking or repeated textures",
            "edited region is much smoother or busier than its surroundings",
        ),
    ),
    Factor(
        "image_quality",
        "Whether the edited image is technically clean: free of noise, unwanted blur, "
        "pixelation, compression blocks, warping and edge artefacts.",
        checks=(
            "noise, grain and pixelation",
            "blur where the scene should be sharp",
            "block artefacts, warping and broken edges",
        ),
        high=("no technical defects beyond those of the unedited content",),
        low=(
            "visible noise, blur or artefacts introduced by the edit",
            "several technical defects that degrade the whole image",
        ),
    ),
    Factor(
        "color_and_lighting",
        "Whether colours, brightness, shadows and highlights of the edited content agree with "
        "the light and colour of the rest of the scene.",
        checks=(
            "direction and softness of light on edited objects",
            "presence, direction and strength of their shadows",
            "colour temperature and saturation against the surroundings",
        ),
        high=("light direction, shadows and colour temperature are unified",),
        low=(
            "missing or wrongly cast shadows, or light from another direction",
            "edited content is visibly tinted, brighter or duller than its surroundings",
        ),
    ),
    Factor(
        "seamlessness",
        "Whether the border between edited and untouched areas is invisible, without seams, "
        "halos, fringes or abrupt transitions.",
        checks=(
            "outlines of edited objects and regions",
            "halos, fringes or cut-out edges",
            "continuity of lines and surfaces across the border",
        ),
        high=("the edit cannot be located from its borders",),
        low=(
            "hard cut-out edges, halos or visible patches",
            "lines or surfaces break at the border of the edit",
        ),
    ),
)

INSTRUCTION_FIDELITY_FACTORS: tuple[Factor, ...] = (
    Factor(
        "alignment",
        "Whether the changes made are the ones the instruction asks for: the right targets, "
        "with the requested kind, colour, attributes and placement. This judges correctness "
        "of what changed, not whether every part was done or how real it looks.",
        checks=(
            "what the instruction requests and which targets it names",
            "whether the edit touched those targets and not others",
            "requested specifics: object type, colour, attribute, position",
        ),
        high=("the instruction is read and executed correctly on the right targets",),
        low=(
            "the instruction is misread, or the wrong object was changed",
            "requested colours, objects or attributes are wrong",
        ),
    ),
    Factor(
        "completeness",
        "Whether every part of the instruction was carried out, including each target of a "
        "compound or multi-object request. This judges thoroughness, not accuracy or realism.",
        checks=(
            "the separate parts of the instruction",
            "whether each part and each named target was addressed",
            "parts left undone or only half done",
        ),
        high=("every requested part and target has been handled",),
        low=(
            "a major part of the instruction is missing",
            "several named targets are left untouched",
        ),
    ),
    Factor(
        "plausibility",
        "Whether the edited result could exist in the real world: physically possible, "
        "logically consistent, with sound anatomy and structure. This judges the result, not "
        "whether the instruction itself describes something realistic.",
        checks=(
            "physical possibility of the edited scene",
            "logical consistency between edited and untouched content",
            "anatomy of people and animals, structure of objects",
        ),
        high=("the result is believable as a real photograph or scene",),
        low=("impossible physics, contradictions or broken anatomy",),
    ),
)

IMAGE_PRESERVATION_FACTORS: tuple[Factor, ...] = (
    Factor(
        "unchanged_regions",
        "Whether the parts of the image the instruction does not mention are left as they "
        "were: the same objects, positions, colours and details outside the edited area.",
        checks=(
            "areas away from the edit target",
            "objects that appear, vanish or move",
            "colour or detail drift in the background",
        ),
        high=("everything outside the requested change is untouched",),
        low=("regions the instruction never mentions were altered, added to or removed",),
    ),
    Factor(
        "global_consistency",
        "Whether the picture as a whole keeps its original character after the edit: "
        "composition, viewpoint, framing, style, colour grading and overall lighting.",
        checks=(
            "camera viewpoint, crop and composition",
            "overall style and colour grading",
            "global brightness and contrast",
        ),
        high=("the edited image reads as the same photograph with one intended change",),
        low=(
            "the viewpoint, framing or style shifted",
            "the whole image was recoloured, relit or re-rendered",
        ),
    ),
    Factor(
        "identity_preservation",
        "Whether people, animals and distinctive objects that should persist keep their "
        "identity: faces, features, markings, shapes and written text stay recognisably the same.",
        checks=(
            "faces and facial features",
            "fur patterns, markings, logos and written text",
            "shape and proportions of kept objects",
        ),
        high=("every kept subject is clearly the same individual or object",),
        low=("a kept person, animal or object looks like a different one",),
    ),
)

EDIT_QUALITY = FactorRubric(
    "edit_quality",
    EDIT_QUALITY_FACTORS,
    focus="edit quality: how well the edit integrates into the image",
    description="Six 1-7 edit-quality factors (scale, space, texture, quality, light, seams); "
    "value = (mean - 1) / 6.",
)
INSTRUCTION_FIDELITY = FactorRubric(
    "instruction_fidelity",
    INSTRUCTION_FIDELITY_FACTORS,
    focus="instruction fidelity: how faithfully the edit carries out the instruction",
    description="Alignment, completeness, plausibility (1-7); value = (mean - 1) / 6.",
)
IMAGE_PRESERVATION = FactorRubric(
    "image_preservation",
    IMAGE_PRESERVATION_FACTORS,
    focus="image preservation: whether the edit leaves alone what it should",
    description="Unchanged regions, global consistency, identity preservation (1-7); "
    "value = (mean - 1) / 6.",
)

#: The three built-in factor rubrics, registered by :mod:`cigeval.rubrics`.
FACTOR_RUBRICS: tuple[FactorRubric, ...] = (EDIT_QUALITY, INSTRUCTION_FIDELITY, IMAGE_PRESERVATION)

"""The built-in factor rubrics: edit quality, instruction fidelity and image preservation.

``edit_quality`` and ``instruction_fidelity`` come from two reference-based rubric
specifications (edit quality; instruction fidelity): their factor keys, the 1-7 integer
scale, the 15-30 word justification, the ``image_id`` / ``offline_factor_results`` answer keys
and the meaning of every definition, band and constraint follow them. In those
specifications every clause is relative to the ground-truth edit ("as realistic as in the
ground truth", "no additional issues beyond what appears in the ground truth"), so each factor
here has an offline wording (:class:`~cigeval.rubrics.factor_rubric.FactorText`) that states
it against the ground truth, and each rubric carries the specifications' constraints for the
offline mode. The wording itself is cigeval's.

cigeval's own extensions, not in the specifications: the reference-free ``online`` mode (the
shared, absolute wording of each factor, answered under ``online_factor_results``) and the
whole ``image_preservation`` rubric (worded against the ground truth offline, in the same
style). Each rubric is a :class:`~cigeval.rubrics.factor_rubric.FactorRubric`, the class users
build their own with.
"""

from __future__ import annotations

from cigeval.rubrics.factor_rubric import Factor, FactorRubric, FactorText

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
        offline=FactorText(
            "Whether objects the edit added or changed have sizes and proportions in the "
            "edited image that are as realistic as those in the ground truth.",
            checks=(
                "which objects were added, resized or altered, in both images",
                "the size of those objects in the edited image against their size in the ground "
                "truth",
                "whether size relations to neighbouring objects are as believable as in the "
                "ground truth",
                "perspective and scaling with depth in both images",
            ),
            high=(
                "scale is as realistic as in the ground truth, or more so",
                "proportions of the edited objects are as believable as the ground truth's",
                "size relations with neighbouring objects equal or beat the ground truth's",
                "no scale problem that the ground truth does not also have",
            ),
            low=(
                "proportions are clearly worse than in the ground truth",
                "an edited object is more obviously too large or too small than in the ground "
                "truth",
                "size relations are less believable than in the ground truth",
                "a prominent scale problem appears that the ground truth does not have",
            ),
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
        offline=FactorText(
            "Whether positions, orientations and depth order of objects in the edited image "
            "are as logical and as well kept as in the ground truth.",
            checks=(
                "placement, orientation and arrangement of objects in both images",
                "whether the edited image respects physical support and contact as well as the "
                "ground truth",
                "depth order and occlusion in both images",
                "how well the edited content fits the scene geometry in each image",
            ),
            high=(
                "spatial relations are as sound as in the ground truth, or sounder",
                "positions and orientations are as logical as the ground truth's",
                "physical constraints are respected as well as in the ground truth",
                "depth order is as correct as in the ground truth",
            ),
            low=(
                "the spatial arrangement is clearly worse than the ground truth's",
                "positions are less logical or less physically possible than in the ground truth",
                "depth order is less accurate than in the ground truth",
                "a spatial contradiction appears that the ground truth does not have",
            ),
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
        offline=FactorText(
            "Whether texture and detail in the edited image are as consistent as the ground "
            "truth achieves.",
            checks=(
                "texture inside the edited region of both images",
                "how even the level of detail is in each image",
                "whether materials look as natural in the edited image as in the ground truth",
                "whether textures continue the surrounding patterns as well as in the ground truth",
            ),
            high=(
                "texture consistency is as good as the ground truth's, or better",
                "detail levels fit as well as in the ground truth",
                "materials look as natural and as well matched as in the ground truth",
                "texture quality equals or exceeds the ground truth",
            ),
            low=(
                "texture consistency is noticeably worse than the ground truth's",
                "detail levels are much more uneven than in the ground truth",
                "materials look less natural or consistent than in the ground truth",
                "obvious texture flaws appear that the ground truth does not show",
            ),
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
        offline=FactorText(
            "Whether the edited image keeps its technical quality (free of noise, unwanted "
            "blur, artefacts and distortion) as well as the ground truth does.",
            checks=(
                "noise, grain and pixelation in both images",
                "sharpness, and blur where there should be none, in each image",
                "compression blocks, warping and edge artefacts in both images",
                "overall technical soundness of the edited image against the ground truth",
            ),
            high=(
                "technical quality is as good as the ground truth's, or better",
                "noise, blur and artefacts are no worse than in the ground truth",
                "technical soundness is on par with the ground truth or above it",
                "no quality problem that the ground truth does not also have",
            ),
            low=(
                "technical quality is clearly worse than the ground truth's",
                "more noise, unwanted blur or artefacts than in the ground truth",
                "an obvious degradation that the ground truth does not show",
                "several technical problems leave the edited image noticeably worse than the "
                "ground truth",
            ),
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
        offline=FactorText(
            "Whether colours, shadows, highlights and lighting of the edited content agree "
            "with the rest of the image as well as they do in the ground truth.",
            checks=(
                "colour match and harmony in both images",
                "direction of the light on edited content in each image",
                "presence, placement and strength of shadows in both images",
                "highlights and brightness of the edited content in each image",
                "colour temperature and blending into the ambient light, compared with the "
                "ground truth",
            ),
            high=(
                "colour and lighting consistency is as good as the ground truth's, or better",
                "light direction and shadows are as correct as in the ground truth",
                "colour harmony and temperature are as unified as in the ground truth",
                "no lighting problem that the ground truth does not also have",
            ),
            low=(
                "colour or lighting consistency is clearly worse than the ground truth's",
                "light direction or shadows are less accurate than in the ground truth",
                "colour mismatches stand out more than in the ground truth",
                "several lighting problems appear that the ground truth does not have",
            ),
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
        offline=FactorText(
            "Whether the borders and transitions between edited and untouched areas are as "
            "natural and as hard to see in the edited image as in the ground truth.",
            checks=(
                "how visible the border between edited and untouched areas is in both images",
                "how smooth the transitions are in each image",
                "halos, fringes and edge artefacts in both images",
                "continuity of lines and surfaces across the edit, compared with the ground truth",
            ),
            high=(
                "the edit is as seamless as in the ground truth, or more so",
                "borders are as invisible as in the ground truth",
                "transitions are as smooth and natural as the ground truth's",
                "integration equals or exceeds the ground truth",
            ),
            low=(
                "borders are clearly more visible than in the ground truth",
                "transitions are noticeably harsher than the ground truth's",
                "more edge artefacts or integration flaws than in the ground truth",
                "seamlessness is much worse than in the ground truth",
            ),
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
        offline=FactorText(
            "Whether the changes in the edited image match what the instruction asks for as "
            "well as the ground truth's changes do: the right targets, with the requested "
            "kind, colour, attributes and placement. This compares how correct the changes "
            "are, not whether every part was done or how real the result looks.",
            checks=(
                "what the instruction requests, and which targets and specifics it names",
                "how the ground truth reads and carries out the instruction",
                "how the edited image reads and carries out the same instruction",
                "whether the edited image gets the requested specifics (colours, object types, "
                "attributes, targets) as right as the ground truth",
                "whether both images change the same targets",
                "whether the edited image follows the instruction's intent as faithfully as the "
                "ground truth",
            ),
            high=(
                "the instruction is read and carried out as accurately as in the ground truth",
                "requested specifics are met as precisely as in the ground truth",
                "targets are found and changed as accurately as in the ground truth, or more so",
                "the edit follows the instruction's intent as faithfully as the ground truth",
            ),
            low=(
                "the instruction is clearly misread compared with the ground truth",
                "specifics are less accurate than in the ground truth (wrong colours, objects or "
                "attributes)",
                "wrong targets are changed where the ground truth changes the right ones",
                "alignment with the instruction is much worse than the ground truth's",
            ),
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
        offline=FactorText(
            "Whether the edited image carries out every part of the instruction as fully as "
            "the ground truth does, including each target of a compound or multi-object "
            "request. This compares thoroughness, not accuracy or realism.",
            checks=(
                "the separate parts of the instruction",
                "which parts the ground truth completes",
                "which parts the edited image completes",
                "for compound or multi-target instructions, whether the edited image covers "
                "every part and target as fully as the ground truth",
                "omissions in the edited image that the ground truth does not make",
            ),
            high=(
                "every part of the instruction is completed as fully as in the ground truth",
                "every named target is handled as thoroughly as in the ground truth",
                "no omission that the ground truth does not also make",
                "completeness equals or exceeds the ground truth's",
            ),
            low=(
                "a major part of the instruction is missing that the ground truth completes",
                "several targets are left untouched that the ground truth addresses",
                "the instruction is carried out much less thoroughly than in the ground truth",
                "clearly incomplete next to the ground truth's execution",
            ),
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
        offline=FactorText(
            "Whether the edited result could exist in the real world as well as the ground "
            "truth's result could: physically possible, logically consistent, with sound "
            "anatomy and structure. This compares the results of the edits, not whether the "
            "instruction itself is realistic, and not other aspects of quality.",
            checks=(
                "how plausible the ground truth's result is in the real world",
                "how plausible the edited image's result is in the real world",
                "logical consistency of the two images, side by side",
                "whether the edited image avoids impossibilities and contradictions as well as "
                "the ground truth",
                "anatomy and structure in both images",
            ),
            high=(
                "the result is as plausible in the real world as the ground truth's, or more so",
                "logical consistency is on par with the ground truth or better",
                "physics is as sound as in the ground truth",
                "no impossibility or contradiction that the ground truth does not also have",
            ),
            low=(
                "the result is much less plausible than the ground truth's",
                "more logical contradictions or impossibilities than in the ground truth",
                "physical laws are broken more than in the ground truth",
                "clear plausibility problems that the ground truth avoids",
            ),
        ),
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
        offline=FactorText(
            "Whether the parts of the scene the instruction does not mention are kept in "
            "the edited image as faithfully as in the ground truth: the same objects, "
            "positions, colours and details outside the edited area.",
            checks=(
                "areas away from the edit target in both images",
                "objects that appear, vanish or move in the edited image but not in the ground "
                "truth",
                "colour or detail drift outside the edit, against the ground truth",
            ),
            high=(
                "everything outside the requested change is kept as faithfully as in the ground "
                "truth",
                "no object appears, vanishes or moves that the ground truth leaves in place",
            ),
            low=(
                "regions the instruction never mentions were altered, added to or removed, "
                "unlike in the ground truth",
                "the scene outside the edit differs from the ground truth in several places",
            ),
        ),
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
        offline=FactorText(
            "Whether the edited image keeps the picture's overall character (composition, "
            "viewpoint, framing, style, colour grading and overall lighting) as well as the "
            "ground truth does.",
            checks=(
                "camera viewpoint, crop and composition in both images",
                "overall style and colour grading in both images",
                "global brightness and contrast against the ground truth",
            ),
            high=(
                "the overall look is kept as well as in the ground truth: same viewpoint, "
                "framing and style",
            ),
            low=(
                "the viewpoint, framing or style shifted where the ground truth keeps them",
                "the whole image was recoloured, relit or re-rendered, unlike the ground truth",
            ),
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
        offline=FactorText(
            "Whether people, animals and distinctive objects that should persist keep their "
            "identity (faces, features, markings, shapes and written text) as well as they "
            "do in the ground truth.",
            checks=(
                "faces and facial features in both images",
                "fur patterns, markings, logos and written text in both images",
                "shape and proportions of kept objects against the ground truth",
            ),
            high=(
                "every kept subject is as clearly the same individual or object as in the ground "
                "truth",
            ),
            low=(
                "a kept person, animal or object looks like a different one where the ground "
                "truth keeps it recognisable",
            ),
        ),
    ),
)

#: Offline rules of the edit-quality specification beyond the prompt's common ones.
EDIT_QUALITY_CONSTRAINTS: tuple[str, ...] = (
    "Each justification names a concrete, visible difference from the ground truth (e.g. "
    '"the lamp added in Image 2 is larger for its surroundings than the ground truth\'s", not '
    '"the scale differs").',
    "Be precise: say where in the images each difference is.",
    "Stay objective: judge only what is visible, not the editing method or its intent.",
)
#: Offline rules of the instruction-fidelity specification beyond the prompt's common ones.
INSTRUCTION_FIDELITY_CONSTRAINTS: tuple[str, ...] = (
    "Each justification names a concrete, visible difference from the ground truth (e.g. "
    '"Image 2 made the car blue where the ground truth made it red as instructed", not '
    '"the colour alignment differs").',
    "Be precise: say what differs between Image 2 and the ground truth.",
    "Stay objective: judge only what is visible and what the instruction asked for.",
    "For alignment: compare how accurately the two images interpret and carry out the instruction.",
    "For completeness: compare how thoroughly the two images carry out the instruction.",
    "For plausibility: compare how possible the two results would be in the real world.",
)

EDIT_QUALITY = FactorRubric(
    "edit_quality",
    EDIT_QUALITY_FACTORS,
    focus="edit quality: how well the edit integrates into the image",
    description="Six 1-7 edit-quality factors (scale, space, texture, quality, light, seams); "
    "value = (mean - 1) / 6.",
    constraints={"offline": EDIT_QUALITY_CONSTRAINTS},
)
INSTRUCTION_FIDELITY = FactorRubric(
    "instruction_fidelity",
    INSTRUCTION_FIDELITY_FACTORS,
    focus="instruction fidelity: how faithfully the edit carries out the instruction",
    description="Alignment, completeness, plausibility (1-7); value = (mean - 1) / 6.",
    constraints={"offline": INSTRUCTION_FIDELITY_CONSTRAINTS},
)
IMAGE_PRESERVATION = FactorRubric(
    "image_preservation",
    IMAGE_PRESERVATION_FACTORS,
    focus="image preservation: whether the edit leaves alone what it should",
    description="Unchanged regions, global consistency, identity preservation (1-7); "
    "value = (mean - 1) / 6. A cigeval extension.",
)
